// KV-cache bookkeeping on the device against the CPU reference: reshape_and_cache (slots,
// padding), copy_blocks (every layer, K and V), swap_blocks (device <-> pinned host on a side
// stream).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/copy_blocks.cuh"
#include "kernels/cuda/reshape_and_cache.cuh"
#include "kernels/cuda/swap_blocks.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaCacheOps, ReshapeAndCacheMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  for (dtype t : all_dtypes()) {
    for (auto [num_kv_heads, head_dim, block_size] :
         {std::tuple{4, 8, 16}, {8, 128, 16}, {2, 64, 32}}) {
      const int num_blocks = 40, n = 100;
      const size_t cache_elems = size_t(num_blocks) * num_kv_heads * block_size * head_dim;
      auto key = random_floats(size_t(n) * num_kv_heads * head_dim, rng);
      auto value = random_floats(key.size(), rng);
      auto k_cache = random_floats(cache_elems, rng), v_cache = random_floats(cache_elems, rng);
      for (auto* v : {&key, &value, &k_cache, &v_cache}) round_to(*v, t);
      // Distinct random slots, every fifth one padding.
      std::vector<int64_t> all(size_t(num_blocks) * block_size);
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), rng);
      std::vector<int64_t> slots(all.begin(), all.begin() + n);
      for (int i = 0; i < n; i += 5) slots[i] = -1;

      std::vector<float> expected_k = k_cache, expected_v = v_cache;
      cpu::reshape_and_cache(key.data(), value.data(), expected_k.data(), expected_v.data(),
                             slots.data(), n, num_kv_heads, head_dim, block_size);
      device_tensor d_key(key, t), d_value(value, t), d_k(k_cache, t), d_v(v_cache, t);
      auto d_slots = upload(slots);
      reshape_and_cache(d_key.get(), d_value.get(), d_k.get(), d_v.get(), d_slots.as<int64_t>(), n,
                        num_kv_heads, head_dim, block_size, t, nullptr);
      sync_device();
      EXPECT_TRUE(all_close(d_k.download(), expected_k, {0, 0})) << dtype_name(t);
      EXPECT_TRUE(all_close(d_v.download(), expected_v, {0, 0})) << dtype_name(t);
    }
  }
}

// --kv-cache-dtype fp8: each new key and value is rounded to E4M3 as the CPU cache encodes it
// (nearest even, ±448 saturating, subnormals kept), and no other slot is touched.
TEST(CudaCacheOps, ReshapeAndCacheWritesFloat8AsTheCpuEncodes) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(14);
  const int num_kv_heads = 4, head_dim = 64, block_size = 16, num_blocks = 20, n = 60;
  const size_t cache_elems = size_t(num_blocks) * num_kv_heads * block_size * head_dim;
  for (dtype t : all_dtypes()) {
    // Magnitudes from E4M3's subnormals (below 2^-6) to past its largest finite value.
    auto key = random_floats(size_t(n) * num_kv_heads * head_dim, rng, -600, 600);
    auto value = random_floats(key.size(), rng, -1, 1);
    for (size_t i = 0; i < value.size(); i += 3) value[i] *= 1.0f / 128;
    for (auto* v : {&key, &value}) round_to(*v, t);
    std::vector<int64_t> all(size_t(num_blocks) * block_size);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int64_t> slots(all.begin(), all.begin() + n);
    for (int i = 0; i < n; i += 7) slots[i] = -1;

    std::vector<uint8_t> expected_k(cache_elems, 0xAA), expected_v(cache_elems, 0xAA);
    for (int i = 0; i < n; ++i) {
      if (slots[i] < 0) continue;
      const int64_t block = slots[i] / block_size, offset = slots[i] % block_size;
      for (int h = 0; h < num_kv_heads; ++h)
        for (int d = 0; d < head_dim; ++d) {
          const size_t src = (size_t(i) * num_kv_heads + h) * head_dim + d;
          const size_t dst = ((block * num_kv_heads + h) * block_size + offset) * head_dim + d;
          expected_k[dst] = cpu::float8_e4m3::encode(key[src]);
          expected_v[dst] = cpu::float8_e4m3::encode(value[src]);
        }
    }
    device_tensor d_key(key, t), d_value(value, t);
    device_buffer d_k(cache_elems), d_v(cache_elems);
    CUDA_CHECK(cudaMemset(d_k.get(), 0xAA, cache_elems));
    CUDA_CHECK(cudaMemset(d_v.get(), 0xAA, cache_elems));
    auto d_slots = upload(slots);
    reshape_and_cache(d_key.get(), d_value.get(), d_k.get(), d_v.get(), d_slots.as<int64_t>(), n,
                      num_kv_heads, head_dim, block_size, t, nullptr, kv_format::fp8_e4m3);
    sync_device();
    EXPECT_EQ(download<uint8_t>(d_k, cache_elems), expected_k) << dtype_name(t);
    EXPECT_EQ(download<uint8_t>(d_v, cache_elems), expected_v) << dtype_name(t);
  }
}

TEST(CudaCacheOps, CopyBlocksMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(12);
  for (dtype t : all_dtypes()) {
    for (int64_t block_elems : {int64_t{4 * 16 * 8}, int64_t{8 * 16 * 128}, int64_t{3 * 16 * 1}}) {
      const int num_layers = 3, num_blocks = 12;
      // Sources and destinations disjoint: the pairs run at once on the device.
      std::vector<std::pair<int32_t, int32_t>> pairs{{0, 5}, {3, 4}, {11, 1}, {7, 8}};
      std::vector<std::vector<float>> k(num_layers), v(num_layers);
      std::vector<device_tensor> d_k, d_v;
      std::vector<void*> k_ptrs, v_ptrs;
      std::vector<void*> k_host, v_host;
      for (int l = 0; l < num_layers; ++l) {
        k[l] = random_floats(num_blocks * block_elems, rng);
        v[l] = random_floats(num_blocks * block_elems, rng);
        round_to(k[l], t);
        round_to(v[l], t);
        d_k.emplace_back(k[l], t);
        d_v.emplace_back(v[l], t);
        k_host.push_back(k[l].data());
        v_host.push_back(v[l].data());
      }
      for (int l = 0; l < num_layers; ++l) {
        k_ptrs.push_back(d_k[l].get());
        v_ptrs.push_back(d_v[l].get());
      }
      cpu::copy_blocks(k_host, v_host, pairs, block_elems * sizeof(float));
      copy_blocks(k_ptrs, v_ptrs, pairs, block_elems * dtype_size(t), nullptr);
      sync_device();
      for (int l = 0; l < num_layers; ++l) {
        EXPECT_TRUE(all_close(d_k[l].download(), k[l], {0, 0})) << dtype_name(t) << " layer " << l;
        EXPECT_TRUE(all_close(d_v[l].download(), v[l], {0, 0})) << dtype_name(t) << " layer " << l;
      }
    }
  }
}

TEST(CudaCacheOps, SwapBlocksRoundTripsThroughPinnedHostOnSideStream) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(13);
  const dtype t = dtype::bf16;
  const int64_t block_elems = 8 * 16 * 128, num_gpu_blocks = 20, num_cpu_blocks = 10;
  auto gpu = random_floats(num_gpu_blocks * block_elems, rng);
  round_to(gpu, t);
  device_tensor d_gpu(gpu, t);
  pinned_buffer host(num_cpu_blocks * block_elems * dtype_size(t));
  std::memset(host.get(), 0xFF, host.size());

  cudaStream_t side = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  // Swap out (a run of three consecutive pairs and two loose ones), then back into new blocks.
  const std::vector<std::pair<int32_t, int32_t>> out{{2, 0}, {3, 1}, {4, 2}, {9, 7}, {0, 3}};
  swap_blocks(d_gpu.get(), host.get(), out, block_elems * dtype_size(t), side);
  CUDA_CHECK(cudaStreamSynchronize(side));
  std::vector<uint8_t> host_bytes(host.size());
  std::memcpy(host_bytes.data(), host.get(), host.size());
  const auto host_values = from_storage(host_bytes, t);
  std::vector<float> ref_host(host_values.size(), std::nanf(""));
  cpu::swap_blocks(gpu.data(), ref_host.data(), out, block_elems * sizeof(float));
  for (auto [src, dst] : out) {
    const auto begin = ref_host.begin() + dst * block_elems;
    EXPECT_TRUE(all_close(std::vector<float>(host_values.begin() + dst * block_elems,
                                             host_values.begin() + (dst + 1) * block_elems),
                          std::vector<float>(begin, begin + block_elems), {0, 0}))
        << "cpu block " << dst;
  }

  const std::vector<std::pair<int32_t, int32_t>> in{{0, 10}, {1, 11}, {2, 12}, {7, 19}, {3, 15}};
  swap_blocks(host.get(), d_gpu.get(), in, block_elems * dtype_size(t), side);
  cudaEvent_t done = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(done, side));
  CUDA_CHECK(cudaStreamWaitEvent(nullptr, done, 0));  // compute waits on the swap, not the host
  sync_device();
  std::vector<float> expected = gpu;
  cpu::swap_blocks(ref_host.data(), expected.data(), in, block_elems * sizeof(float));
  EXPECT_TRUE(all_close(d_gpu.download(), expected, {0, 0}));
  CUDA_CHECK(cudaEventDestroy(done));
  CUDA_CHECK(cudaStreamDestroy(side));
}

}  // namespace
}  // namespace actorllm::cuda
