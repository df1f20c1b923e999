// Row-major y = x w^T is column-major y^T = w x^T: with w stored (out, in) row-major, that is
// cuBLAS's op(A) = A^T on A = w (lda = in), B = x untransposed (ldb = in), C = y (ldc = out).
#include <climits>
#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/gemm.cuh"

namespace actorllm::cuda {

namespace {

/// y = round_to_T(acc + bias): the 16-bit product with a bias is accumulated in fp32 and
/// rounded once, as the CPU reference does (rounding the product, then the sum, rounds twice).
/// Copies the bias into every row of y (fp32 path: the GEMM then adds x w^T with beta = 1).
template <typename T>
__global__ void broadcast_bias_kernel(T* __restrict__ y, const T* __restrict__ bias,
                                      int64_t out_features) {
  T* row = y + blockIdx.x * out_features;
  for (int64_t j = threadIdx.x; j < out_features; j += blockDim.x) row[j] = bias[j];
}

template <typename T>
__global__ void add_bias_round_kernel(const float* __restrict__ acc,  // (n, out_features)
                                      const T* __restrict__ bias,     // (out_features)
                                      int64_t out_features, T* __restrict__ y) {
  const float* src = acc + blockIdx.x * out_features;
  T* row = y + blockIdx.x * out_features;
  for (int64_t j = threadIdx.x; j < out_features; j += blockDim.x)
    row[j] = from_float<T>(src[j] + to_float(bias[j]));
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
    // fp32 accumulation all the way: no TF32, and no split-K reduction in 16 bits.
    CUBLAS_CHECK(cublasSetMathMode(
        handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    if (workspace_bytes_) CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

gemm_context::~gemm_context() {
  if (handle_) cublasDestroy(handle_);
  if (workspace_) cudaFree(workspace_);
  if (accumulator_) cudaFree(accumulator_);
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
  const cudaDataType_t type = cuda_type(t);
  const int m = static_cast<int>(out_features), cols = static_cast<int>(n),
            k = static_cast<int>(in_features);
  if (bias && t != dtype::f32) {
    const size_t elems = static_cast<size_t>(n) * static_cast<size_t>(out_features);
    if (elems > accumulator_elems_) {
      if (accumulator_) CUDA_CHECK(cudaFree(accumulator_));
      accumulator_ = nullptr;
      CUDA_CHECK(cudaMalloc(&accumulator_, elems * sizeof(float)));
      accumulator_elems_ = elems;
    }
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, cols, k, &one, w, type, k, x,
                              type, k, &zero, accumulator_, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    ACTORLLM_DISPATCH_DTYPE(t, T,
                            add_bias_round_kernel<T>
                            <<<n, 256, 0, stream>>>(accumulator_, static_cast<const T*>(bias),
                                                    out_features, static_cast<T*>(y)));
    CUDA_CHECK_LAUNCH();
    return;
  }
  if (bias) {  // fp32: the bias enters through beta = 1 (no rounding to worry about)
    ACTORLLM_DISPATCH_DTYPE(t, T,
                            broadcast_bias_kernel<T><<<n, 256, 0, stream>>>(
                                static_cast<T*>(y), static_cast<const T*>(bias), out_features));
    CUDA_CHECK_LAUNCH();
  }
  const float alpha = 1.0f, beta = bias ? 1.0f : 0.0f;
  CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, cols, k, &alpha, w, type, k, x,
                            type, k, &beta, y, type, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace actorllm::cuda
