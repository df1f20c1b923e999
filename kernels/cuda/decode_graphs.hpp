#pragma once
/// CUDA graphs for decode steps, as vLLM captures them: a step whose sequences each decode one
/// token and sample it replays a graph captured for its shape, instead of launching a few
/// hundred kernels one by one. A shape is a padded batch size (1, 2, 4, then multiples of 8)
/// and a padded block-table width (a power of two); the batch is padded to it (padding rows
/// have no context and write no cache slot), so the graph's kernels find every array where
/// they were captured and its launch sizes fit every step of that shape. This file is the plan
/// (host C++, no device access); graph_forward_ops captures and replays.
#include <cstdint>
#include <vector>

#include "kernels/forward_ops.hpp"

namespace actorllm::cuda {

struct decode_graph_shape {
  int64_t num_seqs = 0;        ///< padded batch size
  int64_t blocks_per_seq = 0;  ///< padded block-table width
  bool operator<(const decode_graph_shape& o) const {
    return num_seqs != o.num_seqs ? num_seqs < o.num_seqs : blocks_per_seq < o.blocks_per_seq;
  }
  bool operator==(const decode_graph_shape& o) const {
    return num_seqs == o.num_seqs && blocks_per_seq == o.blocks_per_seq;
  }
};

/// What graphs may be captured: batches of up to max_batch sequences (0: none, --enforce-eager)
/// and contexts of up to max_context tokens (vLLM's max_seq_len_to_capture); longer contexts
/// run eagerly.
struct decode_graph_limits {
  int64_t max_batch = 0;
  int64_t max_context = 8192;
};

/// The smallest captured batch size holding num_seqs (1, 2, 4, 8, 16, 24, ...); 0 when it
/// passes max_batch.
int64_t graph_batch_size(int64_t num_seqs, int64_t max_batch);

/// The block-table width of a graph for contexts of up to `blocks` blocks: the next power of
/// two, at least 16.
int64_t graph_table_width(int64_t blocks);

/// The graph shape `batch` replays, or num_seqs 0 where it runs eagerly: a query longer than
/// one token, a logits row that is not its sequence's token in order (rows 0 .. n-1), hidden
/// rows or adapters, more sequences or a longer context than `limits` allow.
decode_graph_shape decode_graph_shape_of(const step_rows& batch, int64_t block_size,
                                         const decode_graph_limits& limits);

/// `batch` padded to `shape`: padding sequences hold token 0 at position 0, a context of
/// length 0 (attention writes zeros for them and reads no block) and slot -1 (no cache
/// write); block tables keep each sequence's first blocks, zeros after. Its logits rows are
/// 0 .. shape.num_seqs - 1, the first batch.num_seqs of them the batch's own.
class padded_decode_batch {
 public:
  padded_decode_batch(const step_rows& batch, const decode_graph_shape& shape, int64_t block_size);
  const step_rows& view() const { return view_; }

 private:
  std::vector<int32_t> token_ids_, positions_, query_start_loc_, seq_lens_, block_tables_,
      logits_indices_;
  std::vector<int64_t> slot_mapping_;
  step_rows view_;
};

}  // namespace actorllm::cuda
