// The fused step from the q/k/v projection to attention (qkv_to_cache) against the separate
// ops it replaces, run on the device one after the other: strided copies of q, k and v, the
// per-head norms (Qwen3), the rotation and reshape_and_cache. Every activation type, with and
// without norms, float8 caches, padding slots.
#include "kernels/cuda/qkv_to_cache.cuh"

#include <gtest/gtest.h>

#include <numeric>

#include "kernels/cuda/reshape_and_cache.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rotary.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

void check_fused(dtype t, kv_format format, bool norms, int64_t head_dim, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t n = 37, heads = 8, kv_heads = 2, block_size = 16, num_blocks = 8;
  const int64_t q_size = heads * head_dim, kv_size = kv_heads * head_dim;
  const int64_t row = q_size + 2 * kv_size, max_position = 64;
  auto qkv = random_floats(size_t(n * row), rng, -2, 2);
  auto cos_sin = random_floats(size_t(max_position * head_dim), rng);
  auto q_norm = random_floats(size_t(head_dim), rng, 0.5f, 1.5f);
  auto k_norm = random_floats(size_t(head_dim), rng, 0.5f, 1.5f);
  for (auto* v : {&qkv, &q_norm, &k_norm}) round_to(*v, t);
  std::vector<int32_t> positions(n);
  for (auto& p : positions) p = int32_t(rng() % max_position);
  std::vector<int64_t> slots(size_t(num_blocks * block_size));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(size_t(n));
  for (int64_t i = 0; i < n; i += 6) slots[i] = -1;

  device_tensor d_qkv(qkv, t), d_qn(q_norm, t), d_kn(k_norm, t);
  auto d_cos = upload(cos_sin);
  auto d_pos = upload(positions);
  auto d_slots = upload(slots);
  const size_t cache_bytes = size_t(num_blocks * block_size * kv_size) * kv_element_size(format, t);
  device_buffer k_want(cache_bytes), v_want(cache_bytes), k_got(cache_bytes), v_got(cache_bytes);
  for (auto* b : {&k_want, &v_want, &k_got, &v_got})
    CUDA_CHECK(cudaMemset(b->get(), 0x3c, cache_bytes));
  device_tensor q_want(size_t(n * q_size), t), q_got(size_t(n * q_size), t);
  device_tensor k(size_t(n * kv_size), t), v(size_t(n * kv_size), t);
  const size_t es = size_t(dtype_size(t));

  // The separate ops.
  CUDA_CHECK(cudaMemcpy2D(q_want.get(), q_size * es, d_qkv.get(), row * es, q_size * es, n,
                          cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaMemcpy2D(k.get(), kv_size * es, static_cast<char*>(d_qkv.get()) + q_size * es,
                          row * es, kv_size * es, n, cudaMemcpyDeviceToDevice));
  CUDA_CHECK(cudaMemcpy2D(v.get(), kv_size * es,
                          static_cast<char*>(d_qkv.get()) + (q_size + kv_size) * es, row * es,
                          kv_size * es, n, cudaMemcpyDeviceToDevice));
  if (norms) {
    rms_norm(q_want.get(), d_qn.get(), n * heads, head_dim, 1e-6f, q_want.get(), t, nullptr);
    rms_norm(k.get(), d_kn.get(), n * kv_heads, head_dim, 1e-6f, k.get(), t, nullptr);
  }
  rotary_embedding(d_pos.as<int32_t>(), q_want.get(), k.get(), n, heads, kv_heads, head_dim,
                   d_cos.as<float>(), head_dim, true, t, nullptr);
  reshape_and_cache(k.get(), v.get(), k_want.get(), v_want.get(), d_slots.as<int64_t>(), n,
                    kv_heads, head_dim, block_size, t, nullptr, format);

  // The fused step.
  qkv_to_cache_args a;
  a.qkv = d_qkv.get();
  a.positions = d_pos.as<int32_t>();
  a.cos_sin = d_cos.as<float>();
  a.q_norm = norms ? d_qn.get() : nullptr;
  a.k_norm = norms ? d_kn.get() : nullptr;
  a.eps = 1e-6f;
  a.slot_mapping = d_slots.as<int64_t>();
  a.k_cache = k_got.get();
  a.v_cache = v_got.get();
  a.q_out = q_got.get();
  a.n = n;
  a.num_heads = heads;
  a.num_kv_heads = kv_heads;
  a.head_dim = head_dim;
  a.block_size = block_size;
  qkv_to_cache(a, t, format, nullptr);
  sync_device();

  // The norms sum in another order: one unit of t's last place apart at most, rarely.
  const tolerance tol = t == dtype::f32 ? tolerance{1e-6f, 1e-5f} : default_tolerance(t);
  const std::string what = std::string(dtype_name(t)) + (norms ? " norms" : "") +
                           (format == kv_format::fp8_e4m3 ? " fp8" : "") + " head_dim " +
                           std::to_string(head_dim);
  EXPECT_TRUE(all_close(q_got.download(), q_want.download(), tol)) << what;
  const auto bytes = [&](const device_buffer& b) { return download<uint8_t>(b, cache_bytes); };
  if (format == kv_format::fp8_e4m3 || !norms) {
    // Without norms the values are bit-equal; a float8 cache's rounding absorbs the rest.
    const auto kw = bytes(k_want), kg = bytes(k_got);
    size_t differ = 0;
    for (size_t i = 0; i < kw.size(); ++i) differ += kw[i] != kg[i];
    EXPECT_LE(differ, norms ? kw.size() / 100 : 0) << what << " K bytes";
    EXPECT_EQ(bytes(v_want), bytes(v_got)) << what << " V";
  } else {
    EXPECT_TRUE(all_close(from_storage(bytes(k_got), t), from_storage(bytes(k_want), t), tol))
        << what << " K";
    EXPECT_EQ(bytes(v_want), bytes(v_got)) << what << " V";
  }
}

TEST(CudaQkvToCache, MatchesTheSeparateOps) {
  REQUIRE_CUDA_DEVICE();
  uint32_t seed = 70;
  for (dtype t : all_dtypes())
    for (kv_format format : {kv_format::activations, kv_format::fp8_e4m3})
      for (bool norms : {false, true})
        for (int64_t head_dim : {64, 128, 40}) check_fused(t, format, norms, head_dim, seed++);
}

TEST(CudaQkvToCache, RefusesWhatItCannotRun) {
  qkv_to_cache_args a;
  a.head_dim = 258;
  EXPECT_THROW(qkv_to_cache(a, dtype::f32, kv_format::activations, nullptr), std::invalid_argument);
  a.head_dim = 64;
  int weight = 0;
  a.q_norm = &weight;
  EXPECT_THROW(qkv_to_cache(a, dtype::f32, kv_format::activations, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace actorllm::cuda
