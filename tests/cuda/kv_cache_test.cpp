// The device KV cache (layout, copy-on-write, swap through the pinned pool), its sizing from
// a memory profile, the weight store and dtype conversion.
#include "kernels/cuda/kv_cache.cuh"

#include <gtest/gtest.h>

#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/fill.cuh"
#include "kernels/cuda/weight_store.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaKvCache, LayoutSizesOfRealModels) {
  // Llama-3-8B: 32 layers, 8 KV heads of 128, blocks of 16 tokens.
  kv_cache_layout llama3;
  llama3.num_layers = 32;
  llama3.num_kv_heads = 8;
  llama3.head_dim = 128;
  llama3.block_size = 16;
  llama3.type = dtype::bf16;
  EXPECT_EQ(llama3.block_elems(), 16384);        // 8 * 16 * 128
  EXPECT_EQ(llama3.bytes_per_block(), 2097152);  // K and V, 32 layers, 2 bytes: 2 MiB
  llama3.type = dtype::f32;
  EXPECT_EQ(llama3.bytes_per_block(), 4194304);  // 4 bytes: 4 MiB
  // stories260K: 5 layers, 4 KV heads of 8.
  kv_cache_layout stories;
  stories.num_layers = 5;
  stories.num_kv_heads = 4;
  stories.head_dim = 8;
  stories.block_size = 16;
  stories.type = dtype::f16;
  EXPECT_EQ(stories.block_elems(), 512);        // 4 * 16 * 8
  EXPECT_EQ(stories.bytes_per_block(), 10240);  // 2 * 5 * 512 * 2
}

TEST(CudaKvCache, GpuBlocksFollowUtilizationAndPeakUse) {
  const size_t gib = size_t{1} << 30;
  const int64_t two_mib = 2097152;  // a Llama-3-8B bf16 block
  // 140 GiB at 0.9 is 126 GiB; 20 GiB in use at peak leaves 106 GiB = 54,272 blocks of 2 MiB.
  EXPECT_EQ(num_gpu_blocks_for(140 * gib, 0.9, 20 * gib, two_mib), 54272);
  // All of 80 GiB, 16 GiB in use: 64 GiB = 32,768 blocks.
  EXPECT_EQ(num_gpu_blocks_for(80 * gib, 1.0, 16 * gib, two_mib), 32768);
  // A partial block does not count: 1000 * 0.5 - 100 = 400 bytes hold 3 blocks of 101, 4 of 100.
  EXPECT_EQ(num_gpu_blocks_for(1000, 0.5, 100, 101), 3);
  EXPECT_EQ(num_gpu_blocks_for(1000, 0.5, 100, 100), 4);
  // 14 GiB allowed, 20 GiB already in use: none fits. The same for no memory left at all.
  EXPECT_EQ(num_gpu_blocks_for(140 * gib, 0.1, 20 * gib, two_mib), 0);
  EXPECT_EQ(num_gpu_blocks_for(140 * gib, 0.9, 126 * gib, two_mib), 0);
  EXPECT_EQ(num_gpu_blocks_for(140 * gib, 0.9, 0, 0), 0);  // a block of no bytes: none
}

TEST(CudaKvCache, TensorsAreDisjointAndSwapsRoundTrip) {
  REQUIRE_CUDA_DEVICE();
  kv_cache_layout layout;
  layout.num_layers = 3;
  layout.num_blocks = 10;
  layout.block_size = 16;
  layout.num_kv_heads = 2;
  layout.head_dim = 64;
  layout.type = dtype::bf16;
  device_kv_cache cache(layout, 4);
  const int64_t tensor_elems = layout.num_blocks * layout.block_elems();
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    fill_uniform(cache.k(l), tensor_elems, -1, 1, 10 + l, layout.type, nullptr);
    fill_uniform(cache.v(l), tensor_elems, -1, 1, 20 + l, layout.type, nullptr);
  }
  sync_device();
  const auto read = [&](void* p) {
    std::vector<uint8_t> bytes(tensor_elems * 2);
    CUDA_CHECK(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost));
    return from_storage(bytes, layout.type);
  };
  std::vector<std::vector<float>> before;
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    before.push_back(read(cache.k(l)));
    before.push_back(read(cache.v(l)));
  }
  // One step: device blocks 1, 2, 7 out to host 0, 1, 3, host 0, 1, 3 back into 8, 9, 0
  // (each layer's swap-out reads block 0's old block 7 first), and block 5 copied to 6.
  cache.move_blocks({{1, 0}, {2, 1}, {7, 3}}, {{0, 8}, {1, 9}, {3, 0}}, {{5, 6}});
  cache.synchronize_moves();

  const int64_t be = layout.block_elems();
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    for (int which = 0; which < 2; ++which) {
      std::vector<float> expected = before[2 * l + which];
      const auto move = [&](int src, int dst) {
        std::copy(before[2 * l + which].begin() + src * be,
                  before[2 * l + which].begin() + (src + 1) * be, expected.begin() + dst * be);
      };
      move(5, 6);
      move(1, 8);
      move(2, 9);
      move(7, 0);
      EXPECT_TRUE(all_close(read(which ? cache.v(l) : cache.k(l)), expected, {0, 0}))
          << "layer " << l << (which ? " V" : " K");
    }
  }
}

// One step's moves on the cache's copy stream, with a compute stream that waits per layer (as
// the forward does) and never for the whole device: what it reads is every layer's blocks
// after the moves. Block 1 is swapped out and, in the same step, swapped into: the layer's
// swap-out reads it first.
TEST(CudaKvCache, ComputeWaitsPerLayerForMovesOnTheCopyStream) {
  REQUIRE_CUDA_DEVICE();
  kv_cache_layout layout;
  layout.num_layers = 4;
  layout.num_blocks = 10;
  layout.block_size = 16;
  layout.num_kv_heads = 8;
  layout.head_dim = 128;
  layout.type = dtype::f16;
  device_kv_cache cache(layout, 4);
  const int64_t tensor_elems = layout.num_blocks * layout.block_elems();
  const size_t tensor_bytes = static_cast<size_t>(tensor_elems) * 2;
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    fill_uniform(cache.k(l), tensor_elems, -1, 1, 30 + l, layout.type, nullptr);
    fill_uniform(cache.v(l), tensor_elems, -1, 1, 40 + l, layout.type, nullptr);
  }
  sync_device();
  const auto read = [&](void* p) {
    std::vector<uint8_t> bytes(tensor_bytes);
    CUDA_CHECK(cudaMemcpy(bytes.data(), p, bytes.size(), cudaMemcpyDeviceToHost));
    return bytes;
  };
  std::vector<std::vector<uint8_t>> before;
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    before.push_back(read(cache.k(l)));
    before.push_back(read(cache.v(l)));
  }
  cache.move_blocks({{3, 2}}, {}, {});  // an earlier step: block 3 to host block 2
  cache.synchronize_moves();
  // This step: block 1 out to host 0, host 2 (block 3) into block 1, block 5 copied to 6.
  cache.move_blocks({{1, 0}}, {{2, 1}}, {{5, 6}});
  device_stream compute;
  pinned_buffer seen(2 * layout.num_layers * tensor_bytes);
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    cache.wait_for_layer(l, compute.get());
    for (int which = 0; which < 2; ++which)
      CUDA_CHECK(cudaMemcpyAsync(seen.as<uint8_t>() + (2 * l + which) * tensor_bytes,
                                 which ? cache.v(l) : cache.k(l), tensor_bytes,
                                 cudaMemcpyDeviceToHost, compute.get()));
  }
  CUDA_CHECK(cudaStreamSynchronize(compute.get()));
  const size_t block_bytes = static_cast<size_t>(layout.block_bytes());
  for (int64_t l = 0; l < layout.num_layers; ++l)
    for (int which = 0; which < 2; ++which) {
      std::vector<uint8_t> expected = before[2 * l + which];
      const auto move = [&](int src, int dst) {
        std::copy(before[2 * l + which].begin() + src * block_bytes,
                  before[2 * l + which].begin() + (src + 1) * block_bytes,
                  expected.begin() + dst * block_bytes);
      };
      move(3, 1);
      move(5, 6);
      const uint8_t* got = seen.as<uint8_t>() + (2 * l + which) * tensor_bytes;
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got))
          << "layer " << l << (which ? " V" : " K");
    }
  // The swapped-out block 1 reached host block 0: back into block 9.
  cache.move_blocks({}, {{0, 9}}, {});
  cache.synchronize_moves();
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    const auto k = read(cache.k(l));
    EXPECT_TRUE(std::equal(before[2 * l].begin() + block_bytes,
                           before[2 * l].begin() + 2 * block_bytes, k.begin() + 9 * block_bytes))
        << "layer " << l;
  }
}

TEST(CudaWeightStore, UploadsInStorageTypeAndKeepsFp32OnRequest) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(41);
  for (dtype t : all_dtypes()) {
    weight_store store(t);
    auto w = random_floats(1000, rng), table = random_floats(64, rng);
    store.upload("w", w);
    store.upload("cos_sin", table, true);
    EXPECT_EQ(store.type_of("w"), t);
    EXPECT_EQ(store.type_of("cos_sin"), dtype::f32);
    EXPECT_EQ(store.numel("w"), 1000);
    EXPECT_EQ(store.bytes(), size_t(1000 * dtype_size(t) + 64 * 4));
    std::vector<uint8_t> bytes(1000 * dtype_size(t));
    CUDA_CHECK(cudaMemcpy(bytes.data(), store.get("w"), bytes.size(), cudaMemcpyDeviceToHost));
    auto expected = w;
    round_to(expected, t);  // the device rounds to nearest even, as the host does
    EXPECT_TRUE(all_close(from_storage(bytes, t), expected, {0, 0})) << dtype_name(t);
    EXPECT_THROW(store.get("missing"), std::out_of_range);
  }
}

// 16-bit host tensors (a checkpoint's own values) reach every storage type: the same type as
// they are, another through the device's conversion; a tensor written on demand as well.
TEST(CudaWeightStore, UploadsSixteenBitHostValuesWithoutFloat32Staging) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(43);
  for (dtype source : {dtype::f16, dtype::bf16}) {
    auto values = random_floats(777, rng, -3, 3);
    round_to(values, source);
    const std::vector<uint8_t> host = to_storage(values, source);
    for (dtype t : all_dtypes()) {
      weight_store store(t);
      store.upload("direct", host_tensor(host.data(), source), 777);
      store.upload(
          "written",
          host_tensor(source, [&](void* out) { std::memcpy(out, host.data(), host.size()); }), 777);
      auto expected = values;
      round_to(expected, t);
      for (const char* name : {"direct", "written"}) {
        std::vector<uint8_t> bytes(777 * dtype_size(t));
        CUDA_CHECK(cudaMemcpy(bytes.data(), store.get(name), bytes.size(), cudaMemcpyDeviceToHost));
        EXPECT_TRUE(all_close(from_storage(bytes, t), expected, {0, 0}))
            << dtype_name(source) << " -> " << dtype_name(t) << " " << name;
      }
    }
  }
  weight_store store(dtype::bf16);
  EXPECT_THROW(store.upload("none", host_tensor(), 4), std::invalid_argument);
}

TEST(CudaConvert, EveryPairOfTypesRoundsLikeTheHost) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(42);
  auto values = random_floats(5000, rng, -100, 100);
  for (dtype from : all_dtypes()) {
    for (dtype to : all_dtypes()) {
      auto src_values = values;
      round_to(src_values, from);
      device_tensor src(src_values, from), dst(values.size(), to);
      dst.poison();
      convert(src.get(), from, dst.get(), to, int64_t(values.size()), nullptr);
      sync_device();
      auto expected = src_values;
      round_to(expected, to);
      EXPECT_TRUE(all_close(dst.download(), expected, {0, 0}))
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

}  // namespace
}  // namespace actorllm::cuda
