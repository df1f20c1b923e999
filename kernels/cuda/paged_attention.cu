#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/paged_attention_decode.cuh"
#include "kernels/cuda/paged_attention_prefill.cuh"

namespace actorllm::cuda {

void paged_attention(const void* q, const void* k_cache, const void* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                     cudaStream_t stream, void* workspace, size_t workspace_bytes) {
  if (batch.max_query_len == 1 && batch.num_tokens == batch.num_seqs && head_dim % 8 == 0 &&
      head_dim <= 256) {
    paged_attention_decode(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim,
                           block_size, scale, out, t, stream, decode_path::automatic, workspace,
                           workspace_bytes);
  } else {
    paged_attention_prefill(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim,
                            block_size, scale, out, t, stream);
  }
}

}  // namespace actorllm::cuda
