#pragma once
/// How many KV blocks a CPU worker gets: the device pool from --num-gpu-blocks-override or
/// from free memory (--gpu-memory-utilization, as vLLM sizes its GPU pool), the CPU swap pool
/// from --num-cpu-blocks-override or --swap-space. Also the check users of vLLM hit most:
/// max_model_len must fit in the pool, else a clear error with the largest value that fits.
#include <cstdint>
#include <string>

#include "config/engine_config.hpp"
#include "model/kv_cache.hpp"

namespace actorllm {

struct kv_budget {
  int32_t num_device_blocks = 0;
  int32_t num_cpu_blocks = 0;
  int32_t num_tier_blocks = 0;  ///< the second KV tier's (--kv-offload-bytes); 0 where none
  int64_t block_bytes = 0;      ///< bytes of one device block (all layers, K and V)
  std::string error;            ///< non-empty: the engine cannot start (one line, with the numbers)
};

/// Bytes of host memory available now (MemAvailable), 0 when unknown.
int64_t available_host_memory();

/// `weight_bytes`: memory the model already holds. `max_model_len`: the resolved context length.
/// The CPU pools' element type for --kv-cache-dtype (auto: float32, the CPU's compute type).
inline kv_cache_dtype cpu_cache_dtype(const cache_config& cache) {
  if (cache.cache_dtype == "float16") return kv_cache_dtype::float16;
  if (cache.cache_dtype == "fp8" || cache.cache_dtype == "fp8_e4m3") return kv_cache_dtype::float8;
  return kv_cache_dtype::float32;
}

kv_budget plan_kv_budget(const cache_config& cache, const kv_cache_shape& block_shape,
                         int64_t weight_bytes, int32_t max_model_len);

/// Sets budget.error when the pools cannot serve: no device block at all, or fewer slots than
/// max_model_len tokens (with the largest max_model_len that fits). `weight_bytes`: the
/// memory the weights hold, named in the first message.
void check_kv_budget(kv_budget& budget, int64_t block_size, int64_t weight_bytes,
                     int32_t max_model_len);

}  // namespace actorllm
