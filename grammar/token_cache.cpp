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
  const position start{state, return_state < 0 ? stack_root : frames.push(return_state, stack_unknown)};
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

  // levels[d]: the positions after the first d bytes of the current trie path, split into
  // exact (stack bottom unknown) and approximate ones; ends[d] says where rules ended there.
  std::vector<std::vector<position>> levels(vocab.max_token_bytes() + 1);
  std::vector<bool> exact_alive(levels.size(), false);
  levels[0] = {{state, stack_unknown}};
  exact_alive[0] = true;

  std::vector<int32_t> accepted, uncertain;
  state_tokens out;
  for (size_t k = 0; k < trie.size();) {
    const vocabulary::trie_node& node = trie[k];
    const size_t d = node.depth;
    end_flags ends;
    walker.step(frames, levels[d - 1], node.byte, levels[d], ends);
    bool exact = ends.exact;
    for (const position& p : levels[d])
      if (!frames.is_approximate(p.stack)) exact = true;
    const bool alive = exact || ends.approximate || !levels[d].empty();
    if (!alive) {
      k = static_cast<size_t>(node.subtree_end);
      continue;
    }
    for (int32_t t = node.tokens_begin; t < node.tokens_end; ++t) {
      if (exact)
        accepted.push_back(sorted[t]);
      else
        uncertain.push_back(t);
    }
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
