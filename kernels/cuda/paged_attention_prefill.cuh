#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace actorllm::cuda {

/// Which prefill kernel runs: the tensor-core one where it can (16-bit activations, head_dim
/// 64 or 128, sm_80 or newer; tensor_core_prefill_chosen), else the CUDA-core one; or one of
/// them by name (tests, bench).
enum class prefill_path { automatic, cuda_cores, tensor_cores };

/// Whether the tensor-core kernel takes activations of type t and head_dim on this device.
bool tensor_core_prefill_takes(dtype t, int64_t head_dim);

/// Whether prefill_path::automatic takes it: where it can, unless ACTORLLM_CUDA_PREFILL=
/// cuda_cores (read once) keeps every prefill on the CUDA-core kernel, a way around it on a
/// device where it misbehaves.
bool tensor_core_prefill_chosen(dtype t, int64_t head_dim);

/// Prefill (and chunked-prefill) attention for a varlen batch over the paged K/V with the
/// causal mask, one thread block per (query tile, sequence, head), with an online softmax:
/// - on CUDA cores, tiles of 32 queries x 32 keys; any query length, head_dim <= 256;
/// - on tensor cores (FlashAttention-2's loop over key tiles, WMMA 16x16x16 products in
///   fp32), tiles of 64 queries x 64 keys, each warp 16 query rows; the scores and the output
///   accumulator stay in shared memory, the probabilities are rounded to t for P V.
/// q, out: (num_tokens, num_heads, head_dim) of type t. Throws std::invalid_argument where the
/// named kernel cannot take the call.
void paged_attention_prefill(const void* q, const void* k_cache, const void* v_cache,
                             const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                             int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                             cudaStream_t stream, prefill_path kernel = prefill_path::automatic);

/// The tensor-core kernel alone (paged_attention_prefill_tc.cu); the caller has checked
/// tensor_core_prefill_takes and the batch.
void paged_attention_prefill_tensor_cores(const void* q, const void* k_cache, const void* v_cache,
                                          const paged_batch& batch, int64_t num_heads,
                                          int64_t num_kv_heads, int64_t head_dim,
                                          int64_t block_size, float scale, void* out, dtype t,
                                          cudaStream_t stream);

}  // namespace actorllm::cuda
