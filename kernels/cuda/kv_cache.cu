#include <cmath>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/copy_blocks.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/swap_blocks.cuh"

namespace actorllm::cuda {

device_kv_cache::device_kv_cache(const kv_cache_layout& layout, int64_t num_cpu_blocks)
    : layout_(layout),
      num_cpu_blocks_(num_cpu_blocks),
      gpu_(static_cast<size_t>(layout.num_blocks * layout.bytes_per_block())),
      cpu_(static_cast<size_t>(num_cpu_blocks * layout.bytes_per_block())) {}

void device_kv_cache::copy_blocks(const std::vector<std::pair<int32_t, int32_t>>& pairs,
                                  cudaStream_t stream) {
  std::vector<void*> ks, vs;
  for (int64_t l = 0; l < layout_.num_layers; ++l) {
    ks.push_back(k(l));
    vs.push_back(v(l));
  }
  cuda::copy_blocks(ks, vs, pairs, layout_.block_bytes(), stream);
}

void device_kv_cache::swap_out(const std::vector<std::pair<int32_t, int32_t>>& pairs,
                               cudaStream_t stream) {
  for (int64_t l = 0; l < layout_.num_layers; ++l) {
    swap_blocks(k(l), cpu_k(l), pairs, layout_.block_bytes(), stream);
    swap_blocks(v(l), cpu_v(l), pairs, layout_.block_bytes(), stream);
  }
}

void device_kv_cache::swap_in(const std::vector<std::pair<int32_t, int32_t>>& pairs,
                              cudaStream_t stream) {
  for (int64_t l = 0; l < layout_.num_layers; ++l) {
    swap_blocks(cpu_k(l), k(l), pairs, layout_.block_bytes(), stream);
    swap_blocks(cpu_v(l), v(l), pairs, layout_.block_bytes(), stream);
  }
}

int64_t num_gpu_blocks_for(size_t total_bytes, double gpu_memory_utilization,
                           size_t in_use_at_peak_bytes, int64_t bytes_per_block) {
  if (bytes_per_block <= 0) return 0;
  const double budget =
      std::floor(double(total_bytes) * gpu_memory_utilization) - double(in_use_at_peak_bytes);
  if (budget <= 0) return 0;
  return static_cast<int64_t>(budget / double(bytes_per_block));
}

size_t device_memory_in_use() {
  const memory_info info = device_memory_info();
  return info.total_bytes - info.free_bytes;
}

}  // namespace actorllm::cuda
