#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/silu_and_mul.cuh"

namespace actorllm::cuda {

namespace {

template <typename T>
__global__ void silu_and_mul_kernel(const T* __restrict__ gate_up,  // (n, 2 * hidden)
                                    int64_t hidden,
                                    T* __restrict__ out) {  // (n, hidden)
  const int64_t row = blockIdx.x;
  const T* gate = gate_up + row * 2 * hidden;
  const T* up = gate + hidden;
  T* dst = out + row * hidden;
  for (int64_t j = blockIdx.y * blockDim.x + threadIdx.x; j < hidden;
       j += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const float g = to_float(gate[j]);
    dst[j] = from_float<T>(g / (1.0f + expf(-g)) * to_float(up[j]));
  }
}

}  // namespace

void silu_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                  cudaStream_t stream) {
  if (n == 0 || hidden == 0) return;
  constexpr int threads = 256;
  const dim3 grid(static_cast<unsigned>(n),
                  static_cast<unsigned>(std::min<int64_t>((hidden + threads - 1) / threads, 16)));
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          silu_and_mul_kernel<T><<<grid, threads, 0, stream>>>(
                              static_cast<const T*>(gate_up), hidden, static_cast<T*>(out)));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
