#pragma once
/// Reproducible test inputs for the kernels' tests.
#include <cstdint>
#include <random>
#include <vector>

namespace actorllm::testing {

/// n values uniform in [-scale, scale), the same for the same seed.
inline std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace actorllm::testing
