// One thread a mask word: it reads 32 bits once and writes only the logits they block, so a
// mostly-open mask costs a read of the mask and little else.
#include <algorithm>
#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/token_bitmask.cuh"
#include "kernels/cuda/token_bitmask_row.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    token_bitmask_kernel(float* __restrict__ logits,  // (n, vocab)
                         int64_t vocab,
                         const int32_t* __restrict__ rows,    // (num_masked)
                         const uint32_t* __restrict__ masks,  // (num_masked, words_per_row)
                         int64_t words_per_row) {
  const int64_t m = blockIdx.y;
  mask_logits_row(logits + static_cast<int64_t>(rows[m]) * vocab, vocab, masks + m * words_per_row,
                  words_per_row, blockIdx.x * int64_t(kThreads) + threadIdx.x,
                  int64_t(gridDim.x) * kThreads);
}

}  // namespace

void apply_token_bitmask(float* logits, int64_t vocab, const int32_t* rows, const uint32_t* masks,
                         int64_t num_masked, int64_t words_per_row, cudaStream_t stream) {
  if (num_masked == 0 || vocab == 0) return;
  if (num_masked > 65535) throw std::invalid_argument("apply_token_bitmask: over 65535 rows");
  const int64_t num_words = (vocab + 31) / 32;
  const dim3 grid(
      static_cast<unsigned>(std::min<int64_t>((num_words + kThreads - 1) / kThreads, 1024)),
      static_cast<unsigned>(num_masked));
  token_bitmask_kernel<<<grid, kThreads, 0, stream>>>(logits, vocab, rows, masks, words_per_row);
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
