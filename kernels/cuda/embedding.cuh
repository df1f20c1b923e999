#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// out(n, dim) = table[ids[i]] for each of the n ids; an id outside [0, vocab) gives a row of
/// zeros instead of a fault.  table: (vocab, dim), ids: (n) int32, out: (n, dim); device memory.
void embedding(const void* table, const int32_t* ids, int64_t n, int64_t dim, void* out, dtype t,
               cudaStream_t stream, int64_t vocab);

}  // namespace actorllm::cuda
