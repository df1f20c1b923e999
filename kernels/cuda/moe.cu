#include "kernels/cuda/check.cuh"
#include "kernels/cuda/moe.cuh"

namespace actorllm::cuda {

namespace {

// One block per token; threads walk the dims. The k choices are summed in their order, in
// float32, as the CPU layer adds them.
template <typename T>
__global__ void moe_combine_kernel(const T* __restrict__ expert_out,   // (num_rows, dim)
                                   const int32_t* __restrict__ rows,   // (n, k)
                                   const float* __restrict__ weights,  // (n, k)
                                   int64_t k, int64_t dim,
                                   const T* __restrict__ shared_out,   // (n, dim) or null
                                   const T* __restrict__ shared_gate,  // (n) or null
                                   T* __restrict__ y) {                // (n, dim)
  const int64_t t = blockIdx.x;
  const float gate = shared_out ? 1.0f / (1.0f + expf(-to_float(shared_gate[t]))) : 0.0f;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j)
      sum += weights[t * k + j] *
             to_float(expert_out[static_cast<int64_t>(rows[t * k + j]) * dim + d]);
    if (shared_out) sum += gate * to_float(shared_out[t * dim + d]);
    y[t * dim + d] = from_float<T>(sum);
  }
}

}  // namespace

void moe_combine(const void* expert_out, const int32_t* rows, const float* weights, int64_t n,
                 int64_t k, int64_t dim, const void* shared_out, const void* shared_gate, void* y,
                 dtype t, cudaStream_t stream) {
  if (n == 0 || dim == 0) return;
  constexpr int threads = 256;
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          moe_combine_kernel<T><<<static_cast<unsigned>(n), threads, 0, stream>>>(
                              static_cast<const T*>(expert_out), rows, weights, k, dim,
                              static_cast<const T*>(shared_out), static_cast<const T*>(shared_gate),
                              static_cast<T*>(y)));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
