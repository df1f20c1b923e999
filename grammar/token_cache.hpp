#pragma once
/// What one automaton state allows, worked out once per state (xgrammar's adaptive token
/// mask cache): the tokens it accepts whatever the stack below it, and the few whose fate
/// depends on that stack (they end the state's rule and read on in its caller). Every other
/// token is rejected whatever the stack.
///
/// The walk starts at (state, stack_unknown) and reads the vocabulary trie depth first (see
/// stack_walker.hpp for the bottoms): a token is accepted when some position survives all of
/// its bytes without popping past the unknown bottom, or the rule may end right after its
/// last byte; uncertain when only over-approximate positions survive; else rejected, and
/// its whole trie subtree with it.
#include <cstdint>
#include <span>
#include <vector>

#include "grammar/automaton.hpp"
#include "grammar/vocabulary.hpp"

namespace actorllm::grammar {

struct state_tokens {
  /// Accepted ids: a bitset of vocabulary::mask_words() words when many, else a sorted list
  /// (exactly one of the two is non-empty, unless none is accepted).
  std::vector<uint32_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  /// Stack-dependent tokens as indices into vocabulary::sorted_ids() (ascending, so in byte
  /// order), each with the length of the prefix it shares with the one before.
  std::vector<int32_t> uncertain;
  std::vector<uint16_t> uncertain_shared;

  size_t num_accepted = 0;
  /// ORs the accepted tokens into `mask`.
  void add_accepted(std::span<uint32_t> mask) const;
  size_t memory_bytes() const;
};

/// Classifies every text token of `vocab` at `state` (a state that reads bytes).
state_tokens classify_tokens(const automaton& a, const vocabulary& vocab, int32_t state);

}  // namespace actorllm::grammar
