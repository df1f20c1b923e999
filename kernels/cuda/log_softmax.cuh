#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// out(n, vocab) fp32 = log_softmax(logits) row by row.  logits: (n, vocab) of type t.
void log_softmax(const void* logits, int64_t n, int64_t vocab, float* out, dtype t,
                 cudaStream_t stream);

}  // namespace actorllm::cuda
