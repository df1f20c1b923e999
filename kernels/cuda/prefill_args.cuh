#pragma once
/// What both prefill attention kernels (CUDA cores, tensor cores) read of a call: the batch's
/// device tables and the attention's shape, scale, window and soft-capping, by value.
#include <algorithm>
#include <cstdint>

#include "kernels/cuda/paged_attention.cuh"

namespace actorllm::cuda {

struct prefill_args {
  const int32_t* query_start_loc;  // (num_seqs + 1)
  const int32_t* seq_lens;         // (num_seqs)
  const int32_t* block_tables;     // (num_seqs, max_blocks_per_seq)
  int64_t max_blocks_per_seq;
  int num_heads, num_kv_heads, head_dim, block_size;
  float scale;
  int64_t sliding_window;  // > 0: a query at position p sees keys p - sliding_window + 1 .. p
  float softcap;           // > 0: scores soft-capped
};

inline prefill_args prefill_args_of(const paged_batch& batch, int64_t num_heads,
                                    int64_t num_kv_heads, int64_t head_dim, int64_t block_size,
                                    float scale) {
  prefill_args a{};
  a.query_start_loc = batch.query_start_loc;
  a.seq_lens = batch.seq_lens;
  a.block_tables = batch.block_tables;
  a.max_blocks_per_seq = batch.max_blocks_per_seq;
  a.num_heads = static_cast<int>(num_heads);
  a.num_kv_heads = static_cast<int>(num_kv_heads);
  a.head_dim = static_cast<int>(head_dim);
  a.block_size = static_cast<int>(block_size);
  a.scale = scale;
  a.sliding_window = std::max<int64_t>(0, batch.sliding_window);
  a.softcap = std::max(0.0f, batch.softcap);
  return a;
}

}  // namespace actorllm::cuda
