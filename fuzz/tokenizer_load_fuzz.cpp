// tokenizer::load (tokenizer/tokenizer.hpp) on an arbitrary tokenizer.json: it loads or throws
// std::exception naming the problem, never crashes; a tokenizer that loads encodes and decodes
// a short text and its first ids without crashing, giving ids inside its vocabulary.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "text/unicode.hpp"
#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace actorllm;
  const auto path = fuzz::scratch_dir() / "tokenizer.json";
  fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  std::optional<tokenizer> tok;
  try {
    tok = tokenizer::load(path);
  } catch (const std::exception&) {
    return 0;
  }
  for (const char* text : {"Once upon a time, 42 cats\n", "  héllo\twörld 😀 <s></s>"}) {
    const std::vector<int32_t> ids = tok->encode(text, true);
    for (int32_t id : ids) FUZZ_CHECK(id >= 0 && static_cast<size_t>(id) < tok->vocab_size());
    FUZZ_CHECK(unicode::is_valid_utf8(tok->decode(ids, false)));
    FUZZ_CHECK(unicode::is_valid_utf8(tok->decode(ids, true)));
  }
  std::vector<int32_t> first;
  for (int32_t id = -1; id < 64; ++id) first.push_back(id);
  FUZZ_CHECK(unicode::is_valid_utf8(tok->decode(first, false)));
  return 0;
}
