#pragma once
// What the CUDA engine tests share: skipping where no device is visible, and comparing two
// logits tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "actors/gpu_worker/forward_backend.hpp"
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

/// A worker's pools for the backend tests: blocks of 16 tokens, `device_blocks` on the
/// device and `cpu_blocks` for swaps; the rest as model_runner_config has it.
inline model_runner_config pools_of(int32_t device_blocks, int32_t cpu_blocks = 0) {
  model_runner_config config;
  config.block_size = 16;
  config.num_device_blocks = device_blocks;
  config.num_cpu_blocks = cpu_blocks;
  return config;
}

}  // namespace actorllm::testing
