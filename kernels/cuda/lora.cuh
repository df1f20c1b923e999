#pragma once
/// Multi-LoRA's batched update on the device (Punica's SGMV shrink and expand): rows of
/// different adapters in one batch, each row's adapter applied to its input after the base
/// projection, as cpu::add_lora does on the host:
///
///   y[row] += scaling_k · (x[row] A_kᵀ) B_kᵀ      for every row whose adapter is k (-1: none)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// The batch's adapters for one projection, as device arrays of `num_adapters` entries: A_k
/// (rank_k, in) and B_k transposed (rank_k, out), float32 and row-major; rank 0 (null
/// pointers): adapter k leaves this projection alone.
struct lora_batch {
  const float* const* a = nullptr;
  const float* const* b_t = nullptr;
  const int32_t* ranks = nullptr;
  const float* scalings = nullptr;
  int32_t num_adapters = 0;
  int32_t max_rank = 0;
};

/// Adds each row's update to y (n rows of y_stride elements, the first `out` written) for
/// x (n, in); both of type t. `adapter_of_row` (n, device) names an adapter or -1; an index
/// past num_adapters is treated as -1. `shrunk` is device scratch of n * max_rank floats.
void add_lora(const void* x, int64_t n, int64_t in, void* y, int64_t out, int64_t y_stride,
              const int32_t* adapter_of_row, const lora_batch& adapters, float* shrunk, dtype t,
              cudaStream_t stream);

}  // namespace actorllm::cuda
