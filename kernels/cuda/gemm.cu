// Row-major y = x w^T is column-major y^T = w x^T: with w stored (out, in) row-major, that is
// cuBLAS's op(A) = A^T on A = w (lda = in), B = x untransposed (ldb = in), C = y (ldc = out).
#include <climits>
#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/gemm.cuh"

namespace actorllm::cuda {

namespace {

/// Writes the bias into every row of y, so that the GEMM adds it with beta = 1 inside its
/// fp32 epilogue: one rounding to the storage type, not two.
template <typename T>
__global__ void broadcast_bias_kernel(T* __restrict__ y,           // (n, out_features)
                                      const T* __restrict__ bias,  // (out_features)
                                      int64_t out_features) {
  T* row = y + blockIdx.x * out_features;
  for (int64_t j = threadIdx.x; j < out_features; j += blockDim.x) row[j] = bias[j];
}

cudaDataType_t cuda_type(dtype t) {
  switch (t) {
    case dtype::f32:
      return CUDA_R_32F;
    case dtype::f16:
      return CUDA_R_16F;
    case dtype::bf16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

}  // namespace

gemm_context::gemm_context(size_t workspace_bytes) : workspace_bytes_(workspace_bytes) {
  CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
    if (workspace_bytes_) CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

gemm_context::~gemm_context() {
  if (handle_) cublasDestroy(handle_);
  if (workspace_) cudaFree(workspace_);
}

void gemm_context::bind(cudaStream_t stream) {
  if (bound_ && stream == stream_) return;
  CUBLAS_CHECK(cublasSetStream(handle_, stream));
  // cublasSetStream resets the workspace to cuBLAS's own pool: set ours again.
  if (workspace_) CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_, workspace_bytes_));
  stream_ = stream;
  bound_ = true;
}

void gemm_context::linear(const void* x, const void* w, const void* bias, int64_t n,
                          int64_t in_features, int64_t out_features, void* y, dtype t,
                          cudaStream_t stream) {
  if (n == 0 || out_features == 0) return;
  if (n > INT_MAX || in_features > INT_MAX || out_features > INT_MAX)
    throw std::invalid_argument("gemm_context::linear: dimension above INT_MAX");
  bind(stream);
  if (bias) {
    ACTORLLM_DISPATCH_DTYPE(t, T,
                            broadcast_bias_kernel<T><<<n, 256, 0, stream>>>(
                                static_cast<T*>(y), static_cast<const T*>(bias), out_features));
    CUDA_CHECK_LAUNCH();
  }
  const float alpha = 1.0f, beta = bias ? 1.0f : 0.0f;
  const cudaDataType_t type = cuda_type(t);
  const int m = static_cast<int>(out_features), cols = static_cast<int>(n),
            k = static_cast<int>(in_features);
  CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, cols, k, &alpha, w, type, k, x,
                            type, k, &beta, y, type, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace actorllm::cuda
