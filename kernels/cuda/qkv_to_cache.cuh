#pragma once
/// The step between the fused q/k/v projection and attention, in one launch per layer: each
/// token's row of the projection (n, q | k | v) is split by strides, q and k are normalised
/// per head where the model says (Qwen3's q_norm / k_norm) and rotated (neox halves, the
/// whole head_dim), q goes to its own tensor for attention and k and v straight to their cache
/// slots. It replaces three strided copies, two norms, the rotation and reshape_and_cache, and
/// rounds as they do: to t after the norm and after the rotation, then to the cache's elements.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

struct qkv_to_cache_args {
  const void* qkv = nullptr;           ///< (n, (num_heads + 2 num_kv_heads) head_dim), type t
  const int32_t* positions = nullptr;  ///< (n) rows of cos_sin
  const float* cos_sin = nullptr;      ///< (max_position, head_dim): cosines, then sines
  const void* q_norm = nullptr;        ///< (head_dim) of type t, or null (then k_norm null too)
  const void* k_norm = nullptr;
  float eps = 1e-6f;
  const int64_t* slot_mapping = nullptr;  ///< (n); a negative slot writes no k or v
  void* k_cache = nullptr;                ///< (num_blocks, num_kv_heads, block_size, head_dim)
  void* v_cache = nullptr;
  void* q_out = nullptr;  ///< (n, num_heads, head_dim), type t
  int64_t n = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
};

/// Runs the step on `stream`. head_dim must be even and at most 256. Throws
/// std::invalid_argument otherwise.
void qkv_to_cache(const qkv_to_cache_args& args, dtype t, kv_format cache, cudaStream_t stream);

}  // namespace actorllm::cuda
