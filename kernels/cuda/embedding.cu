#include "kernels/cuda/check.cuh"
#include "kernels/cuda/embedding.cuh"

namespace actorllm::cuda {

namespace {

template <typename T>
__global__ void embedding_kernel(const T* __restrict__ table,      // (vocab, dim)
                                 const int32_t* __restrict__ ids,  // (n)
                                 int64_t dim, int64_t vocab,
                                 T* __restrict__ out) {  // (n, dim)
  const int64_t row = blockIdx.x;
  const int64_t id = ids[row];
  const bool valid = id >= 0 && id < vocab;
  const T* src = table + (valid ? id : 0) * dim;
  T* dst = out + row * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
    dst[j] = valid ? src[j] : from_float<T>(0.0f);
}

}  // namespace

void embedding(const void* table, const int32_t* ids, int64_t n, int64_t dim, void* out, dtype t,
               cudaStream_t stream, int64_t vocab) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          embedding_kernel<T><<<n, 256, 0, stream>>>(
                              static_cast<const T*>(table), ids, dim, vocab, static_cast<T*>(out)));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
