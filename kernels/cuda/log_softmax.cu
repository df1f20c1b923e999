#include "kernels/cuda/check.cuh"
#include "kernels/cuda/log_softmax.cuh"

namespace actorllm::cuda {

namespace {

template <typename T>
__global__ void __launch_bounds__(1024)
    log_softmax_kernel(const T* __restrict__ logits,  // (n, vocab)
                       int64_t vocab,
                       float* __restrict__ out) {  // (n, vocab)
  __shared__ float scratch[32];
  const T* row = logits + blockIdx.x * vocab;
  float* dst = out + blockIdx.x * vocab;
  float max_logit = -INFINITY;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    max_logit = fmaxf(max_logit, to_float(row[j]));
  max_logit = block_max(max_logit, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
    sum += expf(to_float(row[j]) - max_logit);
  sum = block_sum(sum, scratch);
  const float log_sum = logf(sum) + max_logit;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) dst[j] = to_float(row[j]) - log_sum;
}

}  // namespace

void log_softmax(const void* logits, int64_t n, int64_t vocab, float* out, dtype t,
                 cudaStream_t stream) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          log_softmax_kernel<T>
                          <<<n, 1024, 0, stream>>>(static_cast<const T*>(logits), vocab, out));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
