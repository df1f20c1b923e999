// Row-wise CUDA ops against the CPU reference: embedding, RMSNorm (plain and fused), rotary
// embedding, SiLU-and-mul, log-softmax; every dtype, several shapes.
#include <gtest/gtest.h>

#include <tuple>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/log_softmax.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rotary.cuh"
#include "kernels/cuda/silu_and_mul.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaElementwise, EmbeddingMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(1);
  for (dtype t : all_dtypes()) {
    for (auto [vocab, dim, n] : {std::tuple{512, 64, 7}, {32000, 512, 33}, {1000, 100, 1}}) {
      auto table = random_floats(size_t(vocab) * dim, rng);
      round_to(table, t);
      std::vector<int32_t> ids(n);
      for (auto& id : ids) id = int32_t(rng() % vocab);
      ids[0] = vocab - 1;
      std::vector<float> expected(size_t(n) * dim);
      cpu::embedding(table.data(), ids.data(), n, dim, expected.data());

      device_tensor d_table(table, t), d_out(size_t(n) * dim, t);
      auto d_ids = upload(ids);
      d_out.poison();
      embedding(d_table.get(), d_ids.as<int32_t>(), n, dim, d_out.get(), t, nullptr, vocab);
      sync_device();
      EXPECT_TRUE(all_close(d_out.download(), expected, {0, 0})) << dtype_name(t) << " " << dim;
    }
  }
}

TEST(CudaElementwise, EmbeddingOutOfRangeIdGivesZeros) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(2);
  device_tensor d_table(random_floats(16 * 8, rng), dtype::f32), d_out(2 * 8, dtype::f32);
  auto d_ids = upload(std::vector<int32_t>{16, -1});
  d_out.poison();
  embedding(d_table.get(), d_ids.as<int32_t>(), 2, 8, d_out.get(), dtype::f32, nullptr, 16);
  sync_device();
  EXPECT_TRUE(all_close(d_out.download(), std::vector<float>(16, 0.0f), {0, 0}));
}

TEST(CudaElementwise, RmsNormMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(3);
  for (dtype t : all_dtypes()) {
    for (auto [n, dim] : {std::pair{1, 64}, {5, 4096}, {130, 1000}, {3, 8192}}) {
      auto x = random_floats(size_t(n) * dim, rng, -2, 2), w = random_floats(dim, rng, 0.5, 1.5);
      round_to(x, t);
      round_to(w, t);
      std::vector<float> expected(x.size());
      cpu::rms_norm(x.data(), w.data(), n, dim, 1e-5f, expected.data());

      device_tensor d_x(x, t), d_w(w, t), d_out(x.size(), t);
      d_out.poison();
      rms_norm(d_x.get(), d_w.get(), n, dim, 1e-5f, d_out.get(), t, nullptr);
      sync_device();
      EXPECT_TRUE(all_close(d_out.download(), expected, default_tolerance(t)))
          << dtype_name(t) << " " << n << "x" << dim;
    }
  }
}

TEST(CudaElementwise, FusedAddRmsNormMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(4);
  for (dtype t : all_dtypes()) {
    for (auto [n, dim] : {std::pair{1, 64}, {9, 4096}, {64, 1536}}) {
      auto x = random_floats(size_t(n) * dim, rng, -2, 2);
      auto residual = random_floats(x.size(), rng, -2, 2);
      auto w = random_floats(dim, rng, 0.5, 1.5);
      round_to(x, t);
      round_to(residual, t);
      round_to(w, t);
      std::vector<float> expected_x = x, expected_residual = residual;
      cpu::fused_add_rms_norm(expected_x.data(), expected_residual.data(), w.data(), n, dim, 1e-6f);

      device_tensor d_x(x, t), d_residual(residual, t), d_w(w, t);
      fused_add_rms_norm(d_x.get(), d_residual.get(), d_w.get(), n, dim, 1e-6f, t, nullptr);
      sync_device();
      const auto tol = default_tolerance(t);
      EXPECT_TRUE(all_close(d_residual.download(), expected_residual, tol)) << dtype_name(t);
      EXPECT_TRUE(all_close(d_x.download(), expected_x, tol)) << dtype_name(t);
    }
  }
}

/// A gated activation on the device against its CPU op, every type, rows of several widths.
template <class CpuOp, class DeviceOp>
void expect_gated_activation_matches(CpuOp cpu_op, DeviceOp device_op, uint32_t seed,
                                     int wide_hidden) {
  std::mt19937 rng(seed);
  for (dtype t : all_dtypes()) {
    for (auto [n, hidden] : {std::pair{1, 172}, {17, wide_hidden}, {300, 512}}) {
      auto gate_up = random_floats(size_t(n) * 2 * hidden, rng, -4, 4);
      round_to(gate_up, t);
      std::vector<float> expected(size_t(n) * hidden);
      cpu_op(gate_up.data(), n, hidden, expected.data());

      device_tensor d_in(gate_up, t), d_out(expected.size(), t);
      d_out.poison();
      device_op(d_in.get(), n, hidden, d_out.get(), t, nullptr);
      sync_device();
      EXPECT_TRUE(all_close(d_out.download(), expected, default_tolerance(t)))
          << dtype_name(t) << " " << n << "x" << hidden;
    }
  }
}

TEST(CudaElementwise, SiluAndMulMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  expect_gated_activation_matches(cpu::silu_and_mul, silu_and_mul, 5, 11008);
}

TEST(CudaElementwise, GeluTanhAndMulMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  expect_gated_activation_matches(cpu::gelu_tanh_and_mul, gelu_tanh_and_mul, 6, 2048);
}

TEST(CudaElementwise, ScaleInPlaceMultipliesEveryElement) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  for (dtype t : all_dtypes()) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{3} << 20}) {
      auto x = random_floats(size_t(n), rng, -4, 4);
      round_to(x, t);
      std::vector<float> expected = x;
      for (auto& v : expected) v *= 45.25f;
      round_to(expected, t);
      device_tensor d_x(x, t);
      scale_in_place(d_x.get(), n, 45.25f, t, nullptr);
      sync_device();
      EXPECT_TRUE(all_close(d_x.download(), expected, default_tolerance(t)))
          << dtype_name(t) << " " << n;
    }
  }
}

TEST(CudaElementwise, SoftcapInPlaceMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(8);
  auto x = random_floats(size_t(1) << 20, rng, -100, 100);
  std::vector<float> expected = x;
  cpu::softcap(expected.data(), static_cast<int64_t>(expected.size()), 30.0f);
  device_tensor d_x(x, dtype::f32);
  softcap_in_place(static_cast<float*>(d_x.get()), static_cast<int64_t>(x.size()), 30.0f, nullptr);
  sync_device();
  EXPECT_TRUE(all_close(d_x.download(), expected, tolerance{1e-5f, 1e-5f}));
}

TEST(CudaElementwise, LogSoftmaxMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(6);
  for (dtype t : all_dtypes()) {
    for (auto [n, vocab] : {std::pair{1, 512}, {4, 32000}, {3, 151936}}) {
      auto logits = random_floats(size_t(n) * vocab, rng, -10, 10);
      round_to(logits, t);
      std::vector<float> expected(logits.size());
      cpu::log_softmax(logits.data(), n, vocab, expected.data());

      device_tensor d_logits(logits, t), d_out(logits.size(), dtype::f32);
      d_out.poison();
      log_softmax(d_logits.get(), n, vocab, static_cast<float*>(d_out.get()), t, nullptr);
      sync_device();
      // Output is fp32 for every input type: only the sum's rounding differs.
      EXPECT_TRUE(all_close(d_out.download(), expected, {2e-5f, 1e-5f}))
          << dtype_name(t) << " " << vocab;
    }
  }
}

TEST(CudaElementwise, RotaryEmbeddingMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  struct shape {
    int n, num_heads, num_kv_heads, head_dim, rot_dim;
  };
  for (dtype t : all_dtypes()) {
    for (bool neox : {true, false}) {
      for (shape s : {shape{1, 8, 4, 8, 8}, shape{37, 32, 8, 128, 128}, shape{5, 12, 2, 64, 32}}) {
        const int max_position = 4096;
        std::vector<float> cos_sin(size_t(max_position) * s.rot_dim);
        for (int p = 0; p < max_position; ++p)
          for (int i = 0; i < s.rot_dim / 2; ++i) {
            const double angle = p * std::pow(10000.0, -2.0 * i / s.rot_dim);
            cos_sin[size_t(p) * s.rot_dim + i] = float(std::cos(angle));
            cos_sin[size_t(p) * s.rot_dim + s.rot_dim / 2 + i] = float(std::sin(angle));
          }
        std::vector<int32_t> positions(s.n);
        for (auto& p : positions) p = int32_t(rng() % max_position);
        auto q = random_floats(size_t(s.n) * s.num_heads * s.head_dim, rng);
        auto k = random_floats(size_t(s.n) * s.num_kv_heads * s.head_dim, rng);
        round_to(q, t);
        round_to(k, t);
        std::vector<float> expected_q = q, expected_k = k;
        cpu::rotary_embedding(positions.data(), expected_q.data(), expected_k.data(), s.n,
                              s.num_heads, s.num_kv_heads, s.head_dim, cos_sin.data(), s.rot_dim,
                              neox);

        device_tensor d_q(q, t), d_k(k, t), d_cos_sin(cos_sin, dtype::f32);
        auto d_positions = upload(positions);
        rotary_embedding(d_positions.as<int32_t>(), d_q.get(), d_k.get(), s.n, s.num_heads,
                         s.num_kv_heads, s.head_dim, static_cast<const float*>(d_cos_sin.get()),
                         s.rot_dim, neox, t, nullptr);
        sync_device();
        const auto tol = default_tolerance(t);
        EXPECT_TRUE(all_close(d_q.download(), expected_q, tol))
            << dtype_name(t) << " neox=" << neox << " head_dim=" << s.head_dim;
        EXPECT_TRUE(all_close(d_k.download(), expected_k, tol))
            << dtype_name(t) << " neox=" << neox << " head_dim=" << s.head_dim;
      }
    }
  }
}

}  // namespace
}  // namespace actorllm::cuda
