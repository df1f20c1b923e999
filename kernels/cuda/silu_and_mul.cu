#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/silu_and_mul.cuh"

namespace actorllm::cuda {

namespace {

struct silu {
  __device__ float operator()(float g) const { return g / (1.0f + expf(-g)); }
};

struct gelu_tanh {
  __device__ float operator()(float g) const {
    constexpr float sqrt_2_over_pi = 0.7978845608028654f;
    return 0.5f * g * (1.0f + tanhf(sqrt_2_over_pi * (g + 0.044715f * g * g * g)));
  }
};

template <typename T, typename Activation>
__global__ void act_and_mul_kernel(const T* __restrict__ gate_up,  // (n, 2 * hidden)
                                   int64_t hidden,
                                   T* __restrict__ out) {  // (n, hidden)
  const int64_t row = blockIdx.x;
  const T* gate = gate_up + row * 2 * hidden;
  const T* up = gate + hidden;
  T* dst = out + row * hidden;
  for (int64_t j = blockIdx.y * blockDim.x + threadIdx.x; j < hidden;
       j += static_cast<int64_t>(gridDim.y) * blockDim.x)
    dst[j] = from_float<T>(Activation{}(to_float(gate[j])) * to_float(up[j]));
}

template <typename Activation>
void act_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                 cudaStream_t stream) {
  if (n == 0 || hidden == 0) return;
  constexpr int threads = 256;
  const dim3 grid(static_cast<unsigned>(n),
                  static_cast<unsigned>(std::min<int64_t>((hidden + threads - 1) / threads, 16)));
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          act_and_mul_kernel<T, Activation><<<grid, threads, 0, stream>>>(
                              static_cast<const T*>(gate_up), hidden, static_cast<T*>(out)));
  CUDA_CHECK_LAUNCH();
}

template <typename T>
__global__ void scale_kernel(T* __restrict__ x, int64_t n, float factor) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = from_float<T>(to_float(x[i]) * factor);
}

__global__ void softcap_kernel(float* __restrict__ x, int64_t n, float cap) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = cap * tanhf(x[i] / cap);
}

unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((n + threads - 1) / threads, 4096));
}

}  // namespace

void silu_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                  cudaStream_t stream) {
  act_and_mul<silu>(gate_up, n, hidden, out, t, stream);
}

void gelu_tanh_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                       cudaStream_t stream) {
  act_and_mul<gelu_tanh>(gate_up, n, hidden, out, t, stream);
}

void scale_in_place(void* x, int64_t n, float factor, dtype t, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int threads = 256;
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          scale_kernel<T><<<blocks_for(n, threads), threads, 0, stream>>>(
                              static_cast<T*>(x), n, factor));
  CUDA_CHECK_LAUNCH();
}

void softcap_in_place(float* x, int64_t n, float cap, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int threads = 256;
  softcap_kernel<<<blocks_for(n, threads), threads, 0, stream>>>(x, n, cap);
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
