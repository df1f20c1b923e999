#pragma once
/// Reading many tokens from the same positions: the tokens come in byte order and each
/// starts from the positions its prefix shares with the one before, so common prefixes are
/// read once and a dead prefix rejects every token that extends it.
#include <cstdint>
#include <span>
#include <vector>

#include "grammar/stack_walker.hpp"
#include "grammar/vocabulary.hpp"

namespace actorllm::grammar {

/// Tokens in byte order: indices into vocabulary::sorted_ids(), each with the length of the
/// prefix it shares with the one before it in the list.
struct token_list {
  std::vector<int32_t> tokens;
  std::vector<uint16_t> shared;
  bool empty() const { return tokens.empty(); }
  size_t size() const { return tokens.size(); }
};

/// Builds a token_list from ascending indices into vocabulary::sorted_ids().
token_list make_token_list(const vocabulary& vocab, std::vector<int32_t> sorted_indices);

enum class token_fate : uint8_t {
  rejected,   // no position survives
  accepted,   // an exact position survives, or a rule ends right after it with an exact
              // (or the real root) stack below
  uncertain,  // only over-approximate positions survive (stack_walker.hpp)
};

/// Walks lists of tokens; keeps its buffers between calls (one per thread).
class token_list_walker {
 public:
  /// Reads every token of `list` from `start`. `skip(i)` returning true leaves token i out
  /// (e.g. already in a mask); `decide(i, fate)` receives the others.
  template <class Skip, class Decide>
  void walk(stack_walker& walker, frame_view& frames, const vocabulary& vocab,
            std::span<const position> start, const token_list& list, Skip&& skip, Decide&& decide) {
    const size_t depth = vocab.max_token_bytes() + 1;
    if (levels_.size() < depth) {
      levels_.resize(depth);
      exact_.resize(depth);
      approximate_.resize(depth);
    }
    levels_[0].assign(start.begin(), start.end());
    size_t valid = 0;  // levels_[0..valid] hold the prefix of the last token read
    for (size_t i = 0; i < list.tokens.size(); ++i) {
      valid = std::min<size_t>(valid, list.shared[i]);
      if (skip(i)) continue;
      const std::string_view bytes = vocab.bytes(vocab.sorted_ids()[list.tokens[i]]);
      if (valid > 0 && valid < bytes.size() && levels_[valid].empty()) {  // a dead prefix
        decide(i, token_fate::rejected);
        continue;
      }
      while (valid < bytes.size()) {
        read(walker, frames, static_cast<uint8_t>(bytes[valid]), valid);
        ++valid;
        if (levels_[valid].empty()) break;
      }
      if (valid < bytes.size())
        decide(i, token_fate::rejected);
      else if (exact_[valid])
        decide(i, token_fate::accepted);
      else
        decide(i, approximate_[valid] ? token_fate::uncertain : token_fate::rejected);
    }
  }

 private:
  void read(stack_walker& walker, frame_view& frames, uint8_t byte, size_t from);

  std::vector<std::vector<position>> levels_;
  std::vector<char> exact_, approximate_;  // per level: what its fate would be
};

}  // namespace actorllm::grammar
