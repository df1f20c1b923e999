// Device sampling against a double-precision reference of the same rule: argmax (ties to the
// lowest index), temperature, top-k, top-p, the inverse CDF in index order.
#include "kernels/cuda/sampling.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "tests/cuda/cuda_test_util.hpp"
#include "tests/cuda/reference_draw.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

struct row_params {
  float temperature;
  int32_t top_k;
  float top_p;
  float uniform;
};

/// The token the documented rule picks (reference_draw over the row in double precision), or
/// -1 when a decision lies within rounding distance of a threshold.
int reference_sample(const float* row, int vocab, const row_params& p) {
  row_sampling rule;
  rule.temperature = p.temperature;
  rule.top_k = p.top_k;
  rule.top_p = p.top_p;
  rule.uniform = p.uniform;
  return reference_draw(std::vector<double>(row, row + vocab), rule);
}

TEST(CudaSampling, ArgmaxTakesLowestIndexAmongMaxima) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(31);
  for (dtype t : all_dtypes()) {
    for (int vocab : {512, 32000, 151936}) {
      const int n = 9;
      auto logits = random_floats(size_t(n) * vocab, rng, -10, 10);
      std::vector<int32_t> expected(n);
      for (int i = 0; i < n; ++i) {
        float* row = logits.data() + size_t(i) * vocab;
        const int a = int(rng() % vocab), b = int(rng() % vocab);
        row[a] = row[b] = 20.0f;  // exactly representable in every type
        expected[i] = std::min(a, b);
      }
      logits[size_t(n - 1) * vocab + vocab - 1] = 30.0f;  // the last element wins a row
      expected[n - 1] = vocab - 1;
      device_tensor d_logits(logits, t);
      device_buffer d_tokens(n * sizeof(int32_t));
      CUDA_CHECK(cudaMemset(d_tokens.get(), 0xFF, d_tokens.size()));
      argmax(d_logits.get(), n, vocab, d_tokens.as<int32_t>(), t, nullptr);
      sync_device();
      EXPECT_EQ(download<int32_t>(d_tokens, n), expected) << dtype_name(t) << " " << vocab;
    }
  }
}

TEST(CudaSampling, TopKTopPMatchesReference) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(32);
  const std::vector<int32_t> ks{0, 1, 5, 50, 1 << 30};
  const std::vector<float> ps{1.0f, 0.9f, 0.5f, 0.0f};
  for (dtype t : {dtype::f32, dtype::bf16}) {
    for (int vocab : {1000, 32000, 128256}) {
      const int n = 48;
      std::normal_distribution<float> normal(0.0f, 3.0f);
      std::vector<float> logits(size_t(n) * vocab);
      for (auto& x : logits) x = normal(rng);
      round_to(logits, t);
      std::vector<row_params> params(n);
      std::uniform_real_distribution<float> unit(0.0f, 1.0f);
      for (int i = 0; i < n; ++i)
        params[i] = {i == 0 ? 0.0f : 0.5f + unit(rng), ks[i % ks.size()],
                     ps[(i / ks.size()) % ps.size()], unit(rng) * 0.999f};
      std::vector<float> temperatures, top_p, uniforms;
      std::vector<int32_t> top_k;
      for (const auto& p : params) {
        temperatures.push_back(p.temperature);
        top_k.push_back(p.top_k);
        top_p.push_back(p.top_p);
        uniforms.push_back(p.uniform);
      }
      device_tensor d_logits(logits, t);
      auto d_temperatures = upload(temperatures), d_top_k = upload(top_k), d_top_p = upload(top_p),
           d_uniforms = upload(uniforms);
      device_buffer d_tokens(n * sizeof(int32_t));
      CUDA_CHECK(cudaMemset(d_tokens.get(), 0xFF, d_tokens.size()));
      sample_top_k_top_p(d_logits.get(), n, vocab, d_temperatures.as<float>(),
                         d_top_k.as<int32_t>(), d_top_p.as<float>(), d_uniforms.as<float>(),
                         d_tokens.as<int32_t>(), t, nullptr);
      sync_device();
      const auto tokens = download<int32_t>(d_tokens, n);
      int compared = 0;
      for (int i = 0; i < n; ++i) {
        ASSERT_GE(tokens[i], 0) << "row " << i;
        ASSERT_LT(tokens[i], vocab) << "row " << i;
        const int expected = reference_sample(logits.data() + size_t(i) * vocab, vocab, params[i]);
        if (expected < 0) continue;
        ++compared;
        EXPECT_EQ(tokens[i], expected)
            << dtype_name(t) << " vocab " << vocab << " row " << i << " k " << params[i].top_k
            << " p " << params[i].top_p << " T " << params[i].temperature;
      }
      EXPECT_GE(compared, n * 3 / 4);
    }
  }
}

}  // namespace
}  // namespace actorllm::cuda
