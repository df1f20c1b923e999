#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// Writes each new token's key and value into its slot: slot s is block s / block_size,
/// offset s % block_size; a negative slot is skipped (padding).
/// key, value: (n, num_kv_heads, head_dim); k_cache, v_cache: (num_blocks, num_kv_heads,
/// block_size, head_dim); slot_mapping: (n) int64; all on the device. key and value are of
/// type t, the caches of t or (format fp8_e4m3) float8 bytes, rounded to nearest even with
/// saturation at ±448.
void reshape_and_cache(const void* key, const void* value, void* k_cache, void* v_cache,
                       const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads,
                       int64_t head_dim, int64_t block_size, dtype t, cudaStream_t stream,
                       kv_format format = kv_format::activations);

}  // namespace actorllm::cuda
