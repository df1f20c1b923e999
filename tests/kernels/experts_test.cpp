// The CPU experts' compute refuses a routing that names an expert outside the layer (a router
// bug must not read past the experts' table).
#include "kernels/cpu/experts.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace actorllm::cpu {
namespace {

TEST(cpu_experts, a_choice_outside_the_layer_is_refused) {
  const int64_t dim = 4, width = 2, n = 2, k = 1;
  const std::vector<float> gate_up(2 * width * dim, 0.5f), down(dim * width, 0.5f), x(n * dim, 1);
  const expert_mlp experts[] = {{gate_up.data(), down.data(), width},
                                {gate_up.data(), down.data(), width}};
  const float weights[] = {1.0f, 1.0f};
  experts_scratch scratch;
  std::vector<float> y(n * dim);
  const int32_t in_range[] = {1, 0};
  EXPECT_NO_THROW(run_experts(x.data(), n, dim, experts, 2, in_range, weights, k, {}, nullptr,
                              gate_activation::silu, scratch, y.data()));
  EXPECT_GT(y[0], 0.0f);
  for (const int32_t bad : {2, -1}) {
    const int32_t out_of_range[] = {0, bad};
    EXPECT_THROW(run_experts(x.data(), n, dim, experts, 2, out_of_range, weights, k, {}, nullptr,
                             gate_activation::silu, scratch, y.data()),
                 std::out_of_range)
        << bad;
  }
}

}  // namespace
}  // namespace actorllm::cpu
