#include "kernels/cuda/check.cuh"
#include "kernels/cuda/rms_norm.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void rms_norm_kernel(const T* x,                    // (n, dim); out may alias it
                                const T* __restrict__ weight,  // (dim)
                                int64_t dim, float eps,
                                T* out) {  // (n, dim)
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * dim;
  T* dst = out + blockIdx.x * dim;
  float sum_sq = 0.0f;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
    const float v = to_float(row[j]);
    sum_sq += v * v;
  }
  sum_sq = block_sum(sum_sq, scratch);
  const float scale = rsqrtf(sum_sq / static_cast<float>(dim) + eps);
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
    dst[j] = from_float<T>(to_float(row[j]) * scale * to_float(weight[j]));
}

template <typename T>
__global__ void fused_add_rms_norm_kernel(T* __restrict__ x,             // (n, dim)
                                          T* __restrict__ residual,      // (n, dim)
                                          const T* __restrict__ weight,  // (dim)
                                          int64_t dim, float eps) {
  __shared__ float scratch[32];
  T* row = x + blockIdx.x * dim;
  T* res = residual + blockIdx.x * dim;
  float sum_sq = 0.0f;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
    // The norm reads the residual as stored, so both passes see the same rounded value.
    const T r = from_float<T>(to_float(res[j]) + to_float(row[j]));
    res[j] = r;
    const float v = to_float(r);
    sum_sq += v * v;
  }
  sum_sq = block_sum(sum_sq, scratch);
  const float scale = rsqrtf(sum_sq / static_cast<float>(dim) + eps);
  // Each thread reads back only the residual elements it wrote itself.
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
    row[j] = from_float<T>(to_float(res[j]) * scale * to_float(weight[j]));
}

}  // namespace

void rms_norm(const void* x, const void* weight, int64_t n, int64_t dim, float eps, void* out,
              dtype t, cudaStream_t stream) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_DTYPE(
      t, T,
      rms_norm_kernel<T><<<n, kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(weight), dim, eps, static_cast<T*>(out)));
  CUDA_CHECK_LAUNCH();
}

void fused_add_rms_norm(void* x, void* residual, const void* weight, int64_t n, int64_t dim,
                        float eps, dtype t, cudaStream_t stream) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_DTYPE(
      t, T,
      fused_add_rms_norm_kernel<T><<<n, kThreads, 0, stream>>>(
          static_cast<T*>(x), static_cast<T*>(residual), static_cast<const T*>(weight), dim, eps));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
