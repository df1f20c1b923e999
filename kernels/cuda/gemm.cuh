#pragma once
/// Linear layers through cuBLAS: one handle and one workspace per worker (per device).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// Owns a cuBLAS handle bound to the current device and a workspace sized once at
/// construction. Not thread-safe: one per worker, used from the worker's thread.
class gemm_context {
 public:
  explicit gemm_context(size_t workspace_bytes = size_t{32} << 20);
  ~gemm_context();
  gemm_context(const gemm_context&) = delete;
  gemm_context& operator=(const gemm_context&) = delete;

  /// y(n, out_features) = x(n, in_features) @ w^T + bias, with fp32 accumulation.
  /// w: (out_features, in_features) as Hugging Face stores it; bias: (out_features) or null.
  /// x, w, bias and y are of type t (fp32 runs as true fp32, without TF32).
  void linear(const void* x, const void* w, const void* bias, int64_t n, int64_t in_features,
              int64_t out_features, void* y, dtype t, cudaStream_t stream);

  /// The scratch a 16-bit GEMM with a bias writes (it grows with n): a captured CUDA graph
  /// holds its address.
  const void* scratch() const { return accumulator_; }

 private:
  void bind(cudaStream_t stream);

  cublasHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  bool bound_ = false;
  float* accumulator_ = nullptr;  ///< fp32 (n, out) for 16-bit GEMMs with a bias; grows
  size_t accumulator_elems_ = 0;
};

}  // namespace actorllm::cuda
