#include "grammar/token_cache.hpp"

#include <algorithm>

#include "grammar/stack_walker.hpp"

namespace actorllm::grammar {

void state_tokens::add_accepted(std::span<uint32_t> mask) const {
  if (!accepted_bits.empty()) {
    const size_t n = std::min(mask.size(), accepted_bits.size());
    for (size_t i = 0; i < n; ++i) mask[i] |= accepted_bits[i];
    return;
  }
  for (int32_t id : accepted_ids) mask[id >> 5] |= uint32_t{1} << (id & 31);
}

size_t state_tokens::memory_bytes() const {
  return accepted_bits.size() * 4 + accepted_ids.size() * 4 + uncertain.size() * 6;
}

context_tokens classify_in_context(const automaton& a, const vocabulary& vocab, int32_t state,
                                   int32_t return_state, const token_list& uncertain) {
  stack_walker walker(a);
  frame_arena arena;
  frame_view frames(nullptr, &arena);
  const position start{state,
                       return_state < 0 ? stack_root : frames.push(return_state, stack_unknown)};
  token_list_walker reader;
  context_tokens out;
  std::vector<int32_t> still_uncertain;
  reader.walk(
      walker, frames, vocab, std::span(&start, 1), uncertain, [](size_t) { return false; },
      [&](size_t i, token_fate fate) {
        if (fate == token_fate::accepted)
          out.accepted.push_back(vocab.sorted_ids()[uncertain.tokens[i]]);
        else if (fate == token_fate::uncertain)
          still_uncertain.push_back(uncertain.tokens[i]);
      });
  std::sort(out.accepted.begin(), out.accepted.end());
  out.uncertain = make_token_list(vocab, std::move(still_uncertain));
  return out;
}

state_tokens classify_tokens(const automaton& a, const vocabulary& vocab, int32_t state) {
  const auto& trie = vocab.trie();
  const auto& sorted = vocab.sorted_ids();
  stack_walker walker(a);
  frame_arena arena;
  frame_view frames(nullptr, &arena);

  // levels[d]: the positions after the first d bytes of the current trie path;
  // has_exact[d]: one of them (or a rule ending there) has an exact stack. Most of the trie
  // is read by one position through states that only read bytes: such a level is kept as
  // fast[d] with its one position in fast_state[d] / fast_stack[d] instead.
  const size_t depth = vocab.max_token_bytes() + 1;
  std::vector<std::vector<position>> levels(depth);
  std::vector<char> has_exact(depth, 0), fast(depth, 0);
  std::vector<int32_t> fast_state(depth), fast_stack(depth);
  fast[0] = has_exact[0] = 1;
  fast_state[0] = state;
  fast_stack[0] = stack_unknown;

  std::vector<int32_t> accepted, uncertain;
  accepted.reserve(sorted.size());
  state_tokens out;
  for (size_t k = 0; k < trie.size();) {
    const vocabulary::trie_node& node = trie[k];
    const size_t d = node.depth;
    bool exact = false;
    if (fast[d - 1]) {
      const int32_t t = a.next(fast_state[d - 1], node.byte);
      if (t < 0) {
        k = static_cast<size_t>(node.subtree_end);
        continue;
      }
      if (a.is_plain(t)) {
        fast[d] = 1;
        fast_state[d] = t;
        fast_stack[d] = fast_stack[d - 1];
        exact = has_exact[d - 1];
      } else {
        levels[d - 1].assign(1, {fast_state[d - 1], fast_stack[d - 1]});
      }
    }
    if (!fast[d - 1] || !a.is_plain(a.next(fast_state[d - 1], node.byte))) {
      end_flags ends;
      walker.step(frames, levels[d - 1], node.byte, levels[d], ends);
      exact = ends.exact;
      for (const position& p : levels[d])
        if (!frames.is_approximate(p.stack)) exact = true;
      if (!exact && !ends.approximate && levels[d].empty()) {
        k = static_cast<size_t>(node.subtree_end);
        continue;
      }
      fast[d] = levels[d].size() == 1 && a.is_plain(levels[d][0].state);
      if (fast[d]) {
        fast_state[d] = levels[d][0].state;
        fast_stack[d] = levels[d][0].stack;
      }
    }
    has_exact[d] = exact;
    for (int32_t t = node.tokens_begin; t < node.tokens_end; ++t)
      (exact ? accepted : uncertain).push_back(exact ? sorted[t] : t);
    ++k;
  }

  out.num_accepted = accepted.size();
  if (accepted.size() > vocab.mask_words()) {  // a list would take more bytes than the bitset
    out.accepted_bits.assign(vocab.mask_words(), 0);
    for (int32_t id : accepted) out.accepted_bits[id >> 5] |= uint32_t{1} << (id & 31);
  } else {
    std::sort(accepted.begin(), accepted.end());
    out.accepted_ids = std::move(accepted);
  }
  out.uncertain = make_token_list(vocab, std::move(uncertain));
  return out;
}

}  // namespace actorllm::grammar
