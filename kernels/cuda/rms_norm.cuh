#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// out(n, dim) = x / rms(x) * weight, row by row; fp32 accumulation.
/// x, out: (n, dim); weight: (dim); all of type t on the device.
void rms_norm(const void* x, const void* weight, int64_t n, int64_t dim, float eps, void* out,
              dtype t, cudaStream_t stream);

/// residual(n, dim) += x (rounded to t), then x = rms_norm(residual) * weight.
void fused_add_rms_norm(void* x, void* residual, const void* weight, int64_t n, int64_t dim,
                        float eps, dtype t, cudaStream_t stream);

}  // namespace actorllm::cuda
