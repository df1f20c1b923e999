#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// Rotary position embedding in place on q (n, num_heads, head_dim) and k (n, num_kv_heads,
/// head_dim), both of type t; k may be null. cos_sin: (max_position, rot_dim) fp32 with rot_dim/2
/// cosines then rot_dim/2 sines; positions: (n) int32. neox rotates halves (x[i],
/// x[i + rot_dim/2]), otherwise GPT-J pairs (x[2i], x[2i+1]); dims past rot_dim are untouched.
void rotary_embedding(const int32_t* positions, void* q, void* k, int64_t n, int64_t num_heads,
                      int64_t num_kv_heads, int64_t head_dim, const float* cos_sin, int64_t rot_dim,
                      bool neox, dtype t, cudaStream_t stream);

}  // namespace actorllm::cuda
