#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// dst(n) of type dst_t = src(n) of type src_t, rounded to nearest even. src and dst must not
/// overlap unless they are the same pointer of the same type (then nothing happens).
void convert(const void* src, dtype src_t, void* dst, dtype dst_t, int64_t n, cudaStream_t stream);

}  // namespace actorllm::cuda
