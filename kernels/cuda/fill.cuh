#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// dst(n) = values uniform in [lo, hi), a pure function of (seed, index): random weights and
/// caches for benchmarks and memory profiling without a host round trip.
void fill_uniform(void* dst, int64_t n, float lo, float hi, uint64_t seed, dtype t,
                  cudaStream_t stream);

}  // namespace actorllm::cuda
