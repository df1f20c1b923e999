#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/lora.cuh"

namespace actorllm::cuda {

namespace {

constexpr int shrink_threads = 128;
constexpr int expand_threads = 256;

/// One block per (row, q): shrunk[row][q] = scaling · x[row] · A[q], a block-wide reduction.
template <typename T>
__global__ void lora_shrink_kernel(const T* __restrict__ x, int64_t in,
                                   const int32_t* __restrict__ adapter_of_row, lora_batch adapters,
                                   float* __restrict__ shrunk) {
  const int64_t row = blockIdx.x;
  const int q = blockIdx.y;
  const int32_t k = adapter_of_row[row];
  if (k < 0 || k >= adapters.num_adapters || q >= adapters.ranks[k]) return;
  const float* a = adapters.a[k] + static_cast<int64_t>(q) * in;
  const T* xr = x + row * in;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < in; j += blockDim.x) sum += to_float(xr[j]) * a[j];
  __shared__ float partial[shrink_threads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) shrunk[row * adapters.max_rank + q] = adapters.scalings[k] * partial[0];
}

/// One thread per (row, output): y[row][o] += Σ_q shrunk[row][q] · Bᵀ[q][o].
template <typename T>
__global__ void lora_expand_kernel(const float* __restrict__ shrunk, int64_t out, int64_t y_stride,
                                   const int32_t* __restrict__ adapter_of_row, lora_batch adapters,
                                   T* __restrict__ y) {
  const int64_t row = blockIdx.x;
  const int32_t k = adapter_of_row[row];
  if (k < 0 || k >= adapters.num_adapters) return;
  const int rank = adapters.ranks[k];
  if (rank == 0) return;
  const float* b_t = adapters.b_t[k];
  const float* t = shrunk + row * adapters.max_rank;
  for (int64_t o = blockIdx.y * blockDim.x + threadIdx.x; o < out;
       o += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    float sum = 0.0f;
    for (int q = 0; q < rank; ++q) sum += t[q] * b_t[static_cast<int64_t>(q) * out + o];
    T& dst = y[row * y_stride + o];
    dst = from_float<T>(to_float(dst) + sum);
  }
}

}  // namespace

void add_lora(const void* x, int64_t n, int64_t in, void* y, int64_t out, int64_t y_stride,
              const int32_t* adapter_of_row, const lora_batch& adapters, float* shrunk, dtype t,
              cudaStream_t stream) {
  if (n == 0 || adapters.num_adapters == 0 || adapters.max_rank == 0) return;
  const dim3 shrink_grid(static_cast<unsigned>(n), static_cast<unsigned>(adapters.max_rank));
  const dim3 expand_grid(
      static_cast<unsigned>(n),
      static_cast<unsigned>(std::min<int64_t>((out + expand_threads - 1) / expand_threads, 64)));
  ACTORLLM_DISPATCH_DTYPE(t, T, {
    lora_shrink_kernel<T><<<shrink_grid, shrink_threads, 0, stream>>>(
        static_cast<const T*>(x), in, adapter_of_row, adapters, shrunk);
    CUDA_CHECK_LAUNCH();
    lora_expand_kernel<T><<<expand_grid, expand_threads, 0, stream>>>(
        shrunk, out, y_stride, adapter_of_row, adapters, static_cast<T*>(y));
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
