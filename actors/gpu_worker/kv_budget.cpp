#include "actors/gpu_worker/kv_budget.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace actorllm {

namespace {

/// NOTE: on the CPU backend the device pool shares host memory with everything else; beyond
/// this much, more blocks rarely help a CPU's step rate, so the default pool stops here
/// (the override flag sets any size).
constexpr int64_t max_default_cpu_pool_bytes = int64_t(4) << 30;

}  // namespace

int64_t available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

kv_budget plan_kv_budget(const cache_config& cache, const kv_cache_shape& shape,
                         int64_t weight_bytes, int32_t max_model_len) {
  kv_budget budget;
  const int64_t block_bytes = shape.bytes_per_block();
  budget.block_bytes = block_bytes;
  if (cache.num_gpu_blocks_override >= 0) {
    budget.num_device_blocks = static_cast<int32_t>(cache.num_gpu_blocks_override);
  } else if (cache.kv_cache_memory_bytes >= 0) {
    budget.num_device_blocks = static_cast<int32_t>(
        std::clamp<int64_t>(cache.kv_cache_memory_bytes / block_bytes, 0, 1 << 30));
  } else {
    const int64_t usable =
        static_cast<int64_t>(available_host_memory() * cache.gpu_memory_utilization) - weight_bytes;
    budget.num_device_blocks = static_cast<int32_t>(std::clamp<int64_t>(
        std::min(usable, max_default_cpu_pool_bytes) / block_bytes, 0, 1 << 30));
  }
  if (cache.num_cpu_blocks_override >= 0) {
    budget.num_cpu_blocks = static_cast<int32_t>(cache.num_cpu_blocks_override);
  } else {
    budget.num_cpu_blocks =
        static_cast<int32_t>(cache.swap_space_gib * double(int64_t(1) << 30) / block_bytes);
  }
  budget.num_tier_blocks =
      static_cast<int32_t>(std::clamp<int64_t>(cache.kv_offload_bytes / block_bytes, 0, 1 << 30));
  check_kv_budget(budget, shape.block_size, weight_bytes, max_model_len);
  return budget;
}

void check_kv_budget(kv_budget& budget, int64_t block_size, int64_t weight_bytes,
                     int32_t max_model_len) {
  const int64_t capacity_tokens = int64_t(budget.num_device_blocks) * block_size;
  if (budget.num_device_blocks <= 0) {
    budget.error = "no memory left for the KV cache after loading the weights (" +
                   std::to_string(weight_bytes >> 20) +
                   " MiB); raise --gpu-memory-utilization "
                   "or set --num-gpu-blocks-override";
  } else if (capacity_tokens < max_model_len) {
    std::ostringstream msg;
    msg << "The model's max seq len (" << max_model_len
        << ") is larger than the maximum number of tokens that can be stored in KV cache ("
        << capacity_tokens << " = " << budget.num_device_blocks << " blocks of " << block_size
        << "). Use --max-model-len " << capacity_tokens
        << " or less, or give the cache more blocks (--num-gpu-blocks-override "
        << (max_model_len + block_size - 1) / block_size << ").";
    budget.error = msg.str();
  }
}

}  // namespace actorllm
