#pragma once
/// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that lists the
/// byte ranges it matches in a string. Used by the Split pre-tokenizer and Replace normalizer.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace actorllm {

class tokenizer_regex {
 public:
  /// Compiles `pattern`; `literal` matches the text as is. Throws std::runtime_error with
  /// PCRE2's message and the pattern when it does not compile.
  tokenizer_regex(std::string_view pattern, bool literal);
  ~tokenizer_regex();
  tokenizer_regex(const tokenizer_regex&) = delete;
  tokenizer_regex& operator=(const tokenizer_regex&) = delete;

  /// Every non-overlapping match of the pattern in `text` (valid UTF-8), as [begin, end)
  /// byte offsets, left to right. Empty matches are skipped, as Hugging Face does.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace actorllm
