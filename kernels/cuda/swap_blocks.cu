#include "kernels/cuda/check.cuh"
#include "kernels/cuda/swap_blocks.cuh"

namespace actorllm::cuda {

void swap_blocks(const void* from, void* to, const std::vector<std::pair<int32_t, int32_t>>& pairs,
                 int64_t block_bytes, cudaStream_t stream) {
  const auto* src_base = static_cast<const uint8_t*>(from);
  auto* dst_base = static_cast<uint8_t*>(to);
  for (size_t i = 0; i < pairs.size();) {
    // Extend the run while both sides stay consecutive.
    size_t run = 1;
    while (i + run < pairs.size() && pairs[i + run].first == pairs[i].first + int32_t(run) &&
           pairs[i + run].second == pairs[i].second + int32_t(run))
      ++run;
    CUDA_CHECK(cudaMemcpyAsync(dst_base + pairs[i].second * block_bytes,
                               src_base + pairs[i].first * block_bytes, run * block_bytes,
                               cudaMemcpyDefault, stream));
    i += run;
  }
}

}  // namespace actorllm::cuda
