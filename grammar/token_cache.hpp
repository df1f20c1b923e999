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
#include "grammar/token_walk.hpp"
#include "grammar/vocabulary.hpp"

namespace actorllm::grammar {

struct state_tokens {
  /// Accepted ids: a bitset of vocabulary::mask_words() words when many, else a sorted list
  /// (exactly one of the two is non-empty, unless none is accepted).
  std::vector<uint32_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  /// The tokens whose fate depends on the stack.
  token_list uncertain;

  size_t num_accepted = 0;
  /// ORs the accepted tokens into `mask`.
  void add_accepted(std::span<uint32_t> mask) const;
  size_t memory_bytes() const;
};

/// Classifies every text token of `vocab` at `state` (a state that reads bytes).
state_tokens classify_tokens(const automaton& a, const vocabulary& vocab, int32_t state);

/// The second level of the cache: a state's uncertain tokens, decided again knowing the
/// return state of the frame right below the position (most tokens never read past it).
/// Worked out once per (state, return state) pair from the short uncertain list only.
struct context_tokens {
  std::vector<int32_t> accepted;  // ids, ascending
  token_list uncertain;           // still depends on the frames further down
};

/// `return_state` < 0: the position's stack is the root (nothing below).
context_tokens classify_in_context(const automaton& a, const vocabulary& vocab, int32_t state,
                                   int32_t return_state, const token_list& uncertain);

}  // namespace actorllm::grammar
