// The KV pools of a CPU worker, on two shapes whose block sizes are worked out by hand:
//   stories260K, float32: 2 (K, V) x 5 layers x 4 kv heads x 16 tokens x 8 dims x 4 bytes
//                         = 20,480 bytes a block;
//   Llama-2-7B,  float16: 2 x 32 layers x 32 kv heads x 16 tokens x 128 dims x 2 bytes
//                         = 8 MiB a block.
// The overrides are exact; the swap pool is swap space over the block size; the device pool
// comes from free host memory less the weights (at most 4 GiB); a pool smaller than
// max_model_len is refused with the largest max_model_len that fits.
#include "actors/gpu_worker/kv_budget.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace actorllm {
namespace {

constexpr int64_t mib = int64_t(1) << 20;
constexpr int64_t gib = int64_t(1) << 30;

kv_cache_shape stories_shape() {
  kv_cache_shape s;
  s.num_layers = 5;
  s.num_kv_heads = 4;
  s.head_dim = 8;
  s.block_size = 16;
  s.dtype = kv_cache_dtype::float32;
  return s;
}

kv_cache_shape llama7b_shape() {
  kv_cache_shape s;
  s.num_layers = 32;
  s.num_kv_heads = 32;
  s.head_dim = 128;
  s.block_size = 16;
  s.dtype = kv_cache_dtype::float16;
  return s;
}

cache_config with_overrides(int64_t device_blocks, int64_t cpu_blocks) {
  cache_config c;
  c.num_gpu_blocks_override = device_blocks;
  c.num_cpu_blocks_override = cpu_blocks;
  c.gpu_memory_utilization = 0.0;  // memory must not matter once the pools are given
  c.swap_space_gib = 0.0;
  return c;
}

TEST(kv_budget, the_hand_computed_block_sizes_hold) {
  EXPECT_EQ(stories_shape().bytes_per_block(), 20480);
  EXPECT_EQ(llama7b_shape().bytes_per_block(), 8 * mib);
}

TEST(kv_budget, overrides_set_both_pools_exactly) {
  const auto b = plan_kv_budget(with_overrides(7, 3), stories_shape(), 100 * mib, 112);
  EXPECT_EQ(b.num_device_blocks, 7);
  EXPECT_EQ(b.num_cpu_blocks, 3);
  EXPECT_EQ(b.error, "");
}

TEST(kv_budget, a_cpu_pool_of_zero_blocks_is_allowed) {
  const auto b = plan_kv_budget(with_overrides(7, 0), stories_shape(), 0, 16);
  EXPECT_EQ(b.num_cpu_blocks, 0);
  EXPECT_EQ(b.error, "");
}

TEST(kv_budget, the_swap_pool_is_swap_space_over_the_block_size) {
  cache_config c = with_overrides(1000, -1);
  c.swap_space_gib = 4.0;  // 4096 MiB / 8 MiB
  EXPECT_EQ(plan_kv_budget(c, llama7b_shape(), 0, 16).num_cpu_blocks, 512);
  c.swap_space_gib = 0.5;  // 512 MiB / 8 MiB
  EXPECT_EQ(plan_kv_budget(c, llama7b_shape(), 0, 16).num_cpu_blocks, 64);
  c.swap_space_gib = 0.0;
  EXPECT_EQ(plan_kv_budget(c, llama7b_shape(), 0, 16).num_cpu_blocks, 0);
  c.swap_space_gib = 1.0;  // 1,073,741,824 / 20,480 = 52,428.8: whole blocks only
  EXPECT_EQ(plan_kv_budget(c, stories_shape(), 0, 16).num_cpu_blocks, 52428);
  auto half = stories_shape();
  half.dtype = kv_cache_dtype::float16;  // 10,240 bytes: 104,857.6
  EXPECT_EQ(plan_kv_budget(c, half, 0, 16).num_cpu_blocks, 104857);
}

TEST(kv_budget, the_cpu_cache_dtype_is_float16_or_float8_only_when_asked) {
  cache_config c;
  EXPECT_EQ(cpu_cache_dtype(c), kv_cache_dtype::float32);  // auto: the CPU's compute type
  c.cache_dtype = "float32";
  EXPECT_EQ(cpu_cache_dtype(c), kv_cache_dtype::float32);
  c.cache_dtype = "float16";
  EXPECT_EQ(cpu_cache_dtype(c), kv_cache_dtype::float16);
  c.cache_dtype = "fp8";  // vLLM's names
  EXPECT_EQ(cpu_cache_dtype(c), kv_cache_dtype::float8);
  c.cache_dtype = "fp8_e4m3";
  EXPECT_EQ(cpu_cache_dtype(c), kv_cache_dtype::float8);
  auto eight = stories_shape();
  eight.dtype = kv_cache_dtype::float8;
  EXPECT_EQ(eight.bytes_per_block() * 4, stories_shape().bytes_per_block());
}

TEST(kv_budget, a_pool_holding_exactly_max_model_len_tokens_is_enough) {
  // 7 blocks of 16 = 112 tokens.
  EXPECT_EQ(plan_kv_budget(with_overrides(7, 0), stories_shape(), 0, 112).error, "");
  EXPECT_EQ(plan_kv_budget(with_overrides(7, 0), stories_shape(), 0, 113).error,
            "The model's max seq len (113) is larger than the maximum number of tokens that can "
            "be stored in KV cache (112 = 7 blocks of 16). Use --max-model-len 112 or less, or "
            "give the cache more blocks (--num-gpu-blocks-override 8).");
}

TEST(kv_budget, a_small_pool_is_refused_with_the_largest_context_that_fits) {
  // 4 x 16 = 64 tokens hold less than 100; 100 tokens need ceil(100 / 16) = 7 blocks.
  const auto b = plan_kv_budget(with_overrides(4, 2), stories_shape(), 0, 100);
  EXPECT_EQ(b.num_device_blocks, 4);
  EXPECT_EQ(b.num_cpu_blocks, 2);
  EXPECT_EQ(b.error,
            "The model's max seq len (100) is larger than the maximum number of tokens that can "
            "be stored in KV cache (64 = 4 blocks of 16). Use --max-model-len 64 or less, or "
            "give the cache more blocks (--num-gpu-blocks-override 7).");

  // Blocks of 32: 3 x 32 = 96 tokens; 100 tokens need ceil(100 / 32) = 4 blocks.
  auto wide = stories_shape();
  wide.block_size = 32;
  EXPECT_EQ(plan_kv_budget(with_overrides(3, 0), wide, 0, 100).error,
            "The model's max seq len (100) is larger than the maximum number of tokens that can "
            "be stored in KV cache (96 = 3 blocks of 32). Use --max-model-len 96 or less, or "
            "give the cache more blocks (--num-gpu-blocks-override 4).");
}

TEST(kv_budget, no_device_block_at_all_names_the_weights_and_the_flags) {
  const auto b = plan_kv_budget(with_overrides(0, 0), stories_shape(), 3 * mib + 5, 16);
  EXPECT_EQ(b.num_device_blocks, 0);
  EXPECT_EQ(b.error,
            "no memory left for the KV cache after loading the weights (3 MiB); raise "
            "--gpu-memory-utilization or set --num-gpu-blocks-override");

  kv_budget negative;
  negative.num_device_blocks = -1;
  check_kv_budget(negative, 16, 0, 16);
  EXPECT_EQ(negative.error,
            "no memory left for the KV cache after loading the weights (0 MiB); raise "
            "--gpu-memory-utilization or set --num-gpu-blocks-override");
}

TEST(kv_budget, no_share_of_memory_leaves_no_device_block) {
  cache_config c = with_overrides(-1, 0);
  c.gpu_memory_utilization = 0.0;
  const auto b = plan_kv_budget(c, stories_shape(), 2 * gib, 16);
  EXPECT_EQ(b.num_device_blocks, 0);
  EXPECT_EQ(b.error,
            "no memory left for the KV cache after loading the weights (2048 MiB); raise "
            "--gpu-memory-utilization or set --num-gpu-blocks-override");
}

TEST(kv_budget, weights_larger_than_memory_leave_no_device_block) {
  cache_config c = with_overrides(-1, 0);
  c.gpu_memory_utilization = 1.0;
  const auto b = plan_kv_budget(c, stories_shape(), int64_t(1) << 50, 16);  // 1 PiB
  EXPECT_EQ(b.num_device_blocks, 0);
  EXPECT_EQ(b.error,
            "no memory left for the KV cache after loading the weights (1073741824 MiB); raise "
            "--gpu-memory-utilization or set --num-gpu-blocks-override");
}

TEST(kv_budget, available_host_memory_is_within_the_physical_memory) {
  const int64_t physical = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  const int64_t available = available_host_memory();
  EXPECT_GT(available, 0);
  EXPECT_LE(available, physical);
}

TEST(kv_budget, the_default_device_pool_stops_at_4_gib) {
  if (available_host_memory() < 6 * gib) GTEST_SKIP() << "needs 6 GiB of free memory";
  cache_config c = with_overrides(-1, 0);
  c.gpu_memory_utilization = 1.0;
  const auto b = plan_kv_budget(c, llama7b_shape(), 0, 4096);
  EXPECT_EQ(b.num_device_blocks, 512);  // 4096 MiB / 8 MiB
  EXPECT_EQ(b.error, "");               // 512 x 16 = 8192 tokens >= 4096
}

TEST(kv_budget, the_device_pool_is_the_memory_share_less_the_weights) {
  // Leave about 1 GiB after the weights: about 128 blocks of 8 MiB. MemAvailable moves while
  // other processes run, so 256 MiB either way is allowed (96 to 160 blocks).
  const int64_t available = available_host_memory();
  if (available < 6 * gib) GTEST_SKIP() << "needs 6 GiB of free memory";
  cache_config c = with_overrides(-1, 0);
  c.gpu_memory_utilization = 1.0;
  auto b = plan_kv_budget(c, llama7b_shape(), available - gib, 16);
  EXPECT_GE(b.num_device_blocks, 96);
  EXPECT_LE(b.num_device_blocks, 160);

  // Half the memory, of which the weights take all but 1 GiB: again about 128 blocks.
  c.gpu_memory_utilization = 0.5;
  b = plan_kv_budget(c, llama7b_shape(), available / 2 - gib, 16);
  EXPECT_GE(b.num_device_blocks, 96);
  EXPECT_LE(b.num_device_blocks, 160);
}

}  // namespace
}  // namespace actorllm
