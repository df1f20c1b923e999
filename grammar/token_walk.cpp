#include "grammar/token_walk.hpp"

namespace actorllm::grammar {

token_list make_token_list(const vocabulary& vocab, std::vector<int32_t> sorted_indices) {
  token_list out;
  out.shared.resize(sorted_indices.size(), 0);
  for (size_t i = 1; i < sorted_indices.size(); ++i) {
    std::string_view x = vocab.bytes(vocab.sorted_ids()[sorted_indices[i - 1]]);
    std::string_view y = vocab.bytes(vocab.sorted_ids()[sorted_indices[i]]);
    size_t c = 0;
    while (c < x.size() && c < y.size() && x[c] == y[c]) ++c;
    out.shared[i] = static_cast<uint16_t>(c);
  }
  out.tokens = std::move(sorted_indices);
  return out;
}

void token_list_walker::read(stack_walker& walker, frame_view& frames, uint8_t byte, size_t from) {
  end_flags ends;
  auto& next = levels_[from + 1];
  walker.step(frames, levels_[from], byte, next, ends);
  bool exact = ends.exact || ends.root, approximate = ends.approximate;
  for (const position& p : next) {
    if (frames.is_approximate(p.stack))
      approximate = true;
    else
      exact = true;
  }
  exact_[from + 1] = exact;
  approximate_[from + 1] = approximate;
}

}  // namespace actorllm::grammar
