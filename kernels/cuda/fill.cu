#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fill.cuh"

namespace actorllm::cuda {

namespace {

/// splitmix64: a well-mixed 64-bit hash of the element index.
__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fill_uniform_kernel(T* __restrict__ dst,  // (n)
                                    int64_t n, float lo, float hi, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float u = static_cast<float>(mix(seed ^ mix(static_cast<uint64_t>(i))) >> 40) *
                    (1.0f / 16777216.0f);  // 24 bits: [0, 1)
    dst[i] = from_float<T>(lo + (hi - lo) * u);
  }
}

}  // namespace

void fill_uniform(void* dst, int64_t n, float lo, float hi, uint64_t seed, dtype t,
                  cudaStream_t stream) {
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 65536);
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          fill_uniform_kernel<T>
                          <<<blocks, 256, 0, stream>>>(static_cast<T*>(dst), n, lo, hi, seed));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
