#pragma once
/// Added tokens (special or not) are found in the raw text before normalization and BPE, as
/// Hugging Face's AddedVocabulary does: leftmost-longest matches, with lstrip / rstrip /
/// single_word honoured.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actorllm {

struct added_token {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;       ///< the match swallows whitespace on its left
  bool rstrip = false;       ///< the match swallows whitespace on its right
  bool single_word = false;  ///< matches only when not inside a word
};

/// One piece of the input: either plain text [begin, end) or an added token's id.
struct text_segment {
  size_t begin;
  size_t end;
  int32_t token_id;  ///< -1 for plain text
};

class added_token_matcher {
 public:
  added_token_matcher() = default;
  explicit added_token_matcher(std::vector<added_token> tokens);

  /// Splits `text` into plain-text and added-token segments, in order, covering the text
  /// except for whitespace swallowed by lstrip / rstrip.
  std::vector<text_segment> split(std::string_view text) const;

  const std::vector<added_token>& tokens() const { return tokens_; }

 private:
  std::vector<added_token> tokens_;
  // For each first byte, the indices into tokens_ of the tokens starting with it, longest first.
  std::vector<std::vector<uint32_t>> by_first_byte_ = std::vector<std::vector<uint32_t>>(256);
};

}  // namespace actorllm
