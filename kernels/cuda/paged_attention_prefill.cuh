#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace actorllm::cuda {

/// Prefill (and chunked-prefill) attention for a varlen batch over the paged K/V with the
/// causal mask: flash-style tiles of 32 queries x 32 keys with an online softmax, one thread
/// block per (query tile, sequence, head). Any query lengths, head_dim <= 256.
/// q, out: (num_tokens, num_heads, head_dim) of type t.
void paged_attention_prefill(const void* q, const void* k_cache, const void* v_cache,
                             const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                             int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                             cudaStream_t stream);

}  // namespace actorllm::cuda
