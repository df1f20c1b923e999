#include "kernels/cuda/decode_graphs.hpp"

#include <algorithm>
#include <stdexcept>

namespace actorllm::cuda {

int64_t graph_batch_size(int64_t num_seqs, int64_t max_batch) {
  if (num_seqs <= 0 || num_seqs > max_batch) return 0;
  const int64_t size = num_seqs <= 4 ? (num_seqs <= 1   ? 1
                                        : num_seqs <= 2 ? 2
                                                        : 4)
                                     : (num_seqs + 7) / 8 * 8;
  return std::min(size, max_batch);  // past the last multiple of 8: max_batch itself
}

int64_t graph_table_width(int64_t blocks) {
  int64_t width = 16;
  while (width < blocks) width *= 2;
  return width;
}

decode_graph_shape decode_graph_shape_of(const step_rows& b, int64_t block_size,
                                         const decode_graph_limits& limits) {
  const decode_graph_shape eager;
  if (limits.max_batch <= 0 || b.num_seqs <= 0 || b.num_tokens != b.num_seqs ||
      b.num_logits != b.num_seqs || b.num_hidden != 0 || b.adapter_of_row != nullptr ||
      block_size <= 0)
    return eager;
  int64_t longest = 0;
  for (int64_t s = 0; s < b.num_seqs; ++s) {
    if (b.query_start_loc[s] != s || b.logits_indices[s] != s) return eager;
    longest = std::max<int64_t>(longest, b.seq_lens[s]);
  }
  if (b.query_start_loc[b.num_seqs] != b.num_seqs || longest > limits.max_context) return eager;
  decode_graph_shape shape;
  shape.num_seqs = graph_batch_size(b.num_seqs, limits.max_batch);
  if (shape.num_seqs == 0) return eager;
  shape.blocks_per_seq = graph_table_width((longest + block_size - 1) / block_size);
  return shape;
}

padded_decode_batch::padded_decode_batch(const step_rows& b, const decode_graph_shape& shape,
                                         int64_t block_size) {
  const int64_t n = b.num_seqs, padded = shape.num_seqs, width = shape.blocks_per_seq;
  if (padded < n || width <= 0 || block_size <= 0)
    throw std::invalid_argument("padded_decode_batch: the shape does not hold the batch");
  token_ids_.assign(b.token_ids, b.token_ids + n);
  positions_.assign(b.positions, b.positions + n);
  seq_lens_.assign(b.seq_lens, b.seq_lens + n);
  slot_mapping_.assign(b.slot_mapping, b.slot_mapping + n);
  token_ids_.resize(padded, 0);
  positions_.resize(padded, 0);
  seq_lens_.resize(padded, 0);
  slot_mapping_.resize(padded, -1);
  query_start_loc_.resize(padded + 1);
  logits_indices_.resize(padded);
  for (int64_t s = 0; s <= padded; ++s) query_start_loc_[s] = static_cast<int32_t>(s);
  for (int64_t s = 0; s < padded; ++s) logits_indices_[s] = static_cast<int32_t>(s);
  block_tables_.assign(static_cast<size_t>(padded * width), 0);
  for (int64_t s = 0; s < n; ++s) {
    const int64_t used = (b.seq_lens[s] + block_size - 1) / block_size;
    if (used > width || used > b.max_blocks_per_seq)
      throw std::invalid_argument("padded_decode_batch: a context longer than its table");
    std::copy(b.block_tables + s * b.max_blocks_per_seq,
              b.block_tables + s * b.max_blocks_per_seq + used, block_tables_.begin() + s * width);
  }
  view_.token_ids = token_ids_.data();
  view_.positions = positions_.data();
  view_.slot_mapping = slot_mapping_.data();
  view_.query_start_loc = query_start_loc_.data();
  view_.seq_lens = seq_lens_.data();
  view_.block_tables = block_tables_.data();
  view_.logits_indices = logits_indices_.data();
  view_.num_tokens = padded;
  view_.num_seqs = padded;
  view_.max_blocks_per_seq = width;
  view_.num_logits = padded;
}

}  // namespace actorllm::cuda
