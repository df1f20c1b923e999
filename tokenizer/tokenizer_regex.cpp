#include "tokenizer/tokenizer_regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

namespace actorllm {

struct tokenizer_regex::impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

tokenizer_regex::tokenizer_regex(std::string_view pattern, bool literal) : impl_(new impl) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // UCP makes \s, \w, \d and [[:alpha:]] follow Unicode properties as Oniguruma does in
  // Hugging Face's tokenizers; NO_UTF_CHECK is safe because callers pass valid UTF-8 only.
  uint32_t options = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                              &error, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw std::runtime_error("regex does not compile at offset " + std::to_string(offset) + ": " +
                             reinterpret_cast<const char*>(message) +
                             " in: " + std::string(pattern));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

tokenizer_regex::~tokenizer_regex() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

void tokenizer_regex::find_all(std::string_view text,
                               std::vector<std::pair<size_t, size_t>>& out) const {
  // One match block per thread and pattern size keeps encode() const and thread-safe
  // without allocating per call; it is freed when the thread ends.
  struct match_block {
    pcre2_match_data* data = pcre2_match_data_create(4, nullptr);
    ~match_block() { pcre2_match_data_free(data); }
  };
  thread_local const match_block block;
  pcre2_match_data* data = block.data;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = impl_->jit
                 ? pcre2_jit_match(impl_->code, subject, text.size(), start, 0, data, nullptr)
                 : pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data,
                               nullptr);
    if (rc < 0) break;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.emplace_back(b, e);
      start = e;
    } else {
      // Step over one whole character after an empty match.
      start = b + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
        ++start;
    }
  }
}

}  // namespace actorllm
