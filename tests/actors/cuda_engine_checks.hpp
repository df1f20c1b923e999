#pragma once
// What the CUDA engine tests share: skipping where no device is visible, and comparing two
// logits tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "actors/system/worker_backend.hpp"

#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    if (::actorllm::num_cuda_devices() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

namespace actorllm::testing {

/// Largest |a - b| / (1 + |b|) over two logits tables of the same shape (infinity where the
/// shapes differ).
inline float max_relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / (1.0f + std::abs(b[i])));
  return worst;
}

}  // namespace actorllm::testing
