#pragma once
/// Small helpers the llama_runner's files share (llama_runner.cu, llama_runner_graphs.cu,
/// llama_runner_sampling.cu): argument checks, grow-only device scratch, async uploads.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"

namespace actorllm::cuda::runner_detail {

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("llama_runner: " + what);
}

/// Grows `buf` to hold at least `bytes`; the old contents are dropped.
inline void reserve(device_buffer& buf, size_t bytes) {
  if (buf.size() < bytes) buf = device_buffer(bytes);
}

template <typename T>
void upload_async(device_buffer& dst, const T* src, int64_t n, cudaStream_t stream) {
  if (n > 0)
    CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, static_cast<size_t>(n) * sizeof(T),
                               cudaMemcpyHostToDevice, stream));
}

}  // namespace actorllm::cuda::runner_detail
