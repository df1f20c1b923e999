#include <algorithm>

#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/paged_attention_decode.cuh"
#include "kernels/cuda/paged_attention_prefill.cuh"

namespace actorllm::cuda {

namespace {

bool decode_kernels_take(int64_t head_dim) {
  return head_dim % 8 == 0 && head_dim <= 256;
}

}  // namespace

paged_split split_decode_prefix(const paged_batch& batch, const int32_t* host_query_start_loc,
                                const int32_t* host_seq_lens, int64_t head_dim) {
  paged_split split;
  int64_t decodes = 0;
  if (decode_kernels_take(head_dim))
    while (decodes < batch.num_seqs &&
           host_query_start_loc[decodes + 1] - host_query_start_loc[decodes] == 1)
      ++decodes;
  split.decode = batch;
  split.decode.num_seqs = decodes;
  split.decode.num_tokens = decodes;
  split.decode.max_query_len = decodes > 0 ? 1 : 0;
  split.decode.max_seq_len = 0;
  for (int64_t s = 0; s < decodes; ++s)
    split.decode.max_seq_len = std::max<int64_t>(split.decode.max_seq_len, host_seq_lens[s]);
  split.prefill = batch;
  split.prefill.query_start_loc = batch.query_start_loc + decodes;
  split.prefill.seq_lens = batch.seq_lens + decodes;
  split.prefill.block_tables = batch.block_tables + decodes * batch.max_blocks_per_seq;
  split.prefill.num_seqs = batch.num_seqs - decodes;
  split.prefill.num_tokens = batch.num_tokens - decodes;
  split.prefill.max_query_len = 0;
  split.prefill.max_seq_len = 0;
  for (int64_t s = decodes; s < batch.num_seqs; ++s) {
    split.prefill.max_query_len = std::max<int64_t>(
        split.prefill.max_query_len, host_query_start_loc[s + 1] - host_query_start_loc[s]);
    split.prefill.max_seq_len = std::max<int64_t>(split.prefill.max_seq_len, host_seq_lens[s]);
  }
  return split;
}

void paged_attention(const void* q, const void* k_cache, const void* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                     cudaStream_t stream, void* workspace, size_t workspace_bytes) {
  if (batch.max_query_len == 1 && batch.num_tokens == batch.num_seqs &&
      decode_kernels_take(head_dim)) {
    paged_attention_decode(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim,
                           block_size, scale, out, t, stream, decode_path::automatic, workspace,
                           workspace_bytes);
  } else {
    paged_attention_prefill(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim,
                            block_size, scale, out, t, stream);
  }
}

void paged_attention(const void* q, const void* k_cache, const void* v_cache,
                     const paged_batch& batch, const paged_split& split, int64_t num_heads,
                     int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale,
                     void* out, dtype t, cudaStream_t stream, void* workspace,
                     size_t workspace_bytes) {
  if (split.decode.num_seqs == 0 || split.prefill.num_seqs == 0) {
    paged_attention(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size,
                    scale, out, t, stream, workspace, workspace_bytes);
    return;
  }
  paged_attention_decode(q, k_cache, v_cache, split.decode, num_heads, num_kv_heads, head_dim,
                         block_size, scale, out, t, stream, decode_path::automatic, workspace,
                         workspace_bytes);
  paged_attention_prefill(q, k_cache, v_cache, split.prefill, num_heads, num_kv_heads, head_dim,
                          block_size, scale, out, t, stream);
}

}  // namespace actorllm::cuda
