#include <algorithm>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/convert.cuh"

namespace actorllm::cuda {

namespace {

template <typename S, typename D>
__global__ void convert_kernel(const S* __restrict__ src,  // (n)
                               D* __restrict__ dst,        // (n)
                               int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<D>(to_float(src[i]));
}

}  // namespace

void convert(const void* src, dtype src_t, void* dst, dtype dst_t, int64_t n, cudaStream_t stream) {
  if (n == 0 || (src == dst && src_t == dst_t)) return;
  if (src_t == dst_t) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(src_t), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 65536);
  ACTORLLM_DISPATCH_DTYPE(
      src_t, S,
      ACTORLLM_DISPATCH_DTYPE(dst_t, D,
                              convert_kernel<S, D><<<blocks, 256, 0, stream>>>(
                                  static_cast<const S*>(src), static_cast<D*>(dst), n)));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
