// The mixture-of-experts combine against a host loop: weighted expert rows per token, in
// choice order, plus the sigmoid-gated shared expert.
#include "kernels/cuda/moe.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaMoe, CombineWeighsEachTokensExpertRowsAndTheSharedExpert) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(9);
  for (dtype t : all_dtypes()) {
    for (bool shared : {false, true}) {
      const int64_t n = 37, k = 2, dim = 96, num_rows = n * k;
      auto expert_out = random_floats(size_t(num_rows * dim), rng);
      auto shared_out = random_floats(size_t(n * dim), rng);
      auto gate = random_floats(size_t(n), rng, -3, 3);
      for (auto* v : {&expert_out, &shared_out, &gate}) round_to(*v, t);
      std::vector<int32_t> rows(size_t(n * k));
      for (auto& r : rows) r = static_cast<int32_t>(rng() % num_rows);
      auto weights = random_floats(size_t(n * k), rng, 0, 1);

      std::vector<float> expected(size_t(n * dim));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t d = 0; d < dim; ++d) {
          float sum = 0.0f;
          for (int64_t j = 0; j < k; ++j)
            sum += weights[i * k + j] * expert_out[rows[i * k + j] * dim + d];
          if (shared) sum += 1.0f / (1.0f + std::exp(-gate[i])) * shared_out[i * dim + d];
          expected[i * dim + d] = sum;
        }

      device_tensor d_out(expert_out, t), d_shared(shared_out, t), d_gate(gate, t),
          d_y(expected.size(), t);
      auto d_rows = upload(rows), d_weights = upload(weights);
      d_y.poison();
      moe_combine(d_out.get(), d_rows.as<int32_t>(), d_weights.as<float>(), n, k, dim,
                  shared ? d_shared.get() : nullptr, shared ? d_gate.get() : nullptr, d_y.get(), t,
                  nullptr);
      sync_device();
      EXPECT_TRUE(all_close(d_y.download(), expected, default_tolerance(t)))
          << dtype_name(t) << (shared ? " shared" : "");
    }
  }
}

}  // namespace
}  // namespace actorllm::cuda
