#include "kernels/cpu/lora.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/thread_team.hpp"

namespace actorllm::cpu {

namespace {

/// One row's update: t = scaling · x Aᵀ (rank values), then y += t Bᵀ as `rank` passes of
/// y += t[q] · Bᵀ[q], each a contiguous stream over the outputs.
void add_lora_row(const float* x, int64_t in, float* y, int64_t out, const lora_weights& w,
                  float* t) {
  for (int64_t q = 0; q < w.rank; ++q) {
    const float* aq = w.a + q * in;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < in; ++j) sum += x[j] * aq[j];
    t[q] = w.scaling * sum;
  }
  for (int64_t q = 0; q < w.rank; ++q) {
    const float* bq = w.b_t + q * out;
    const float tq = t[q];
#pragma omp simd
    for (int64_t o = 0; o < out; ++o) y[o] += tq * bq[o];
  }
}

}  // namespace

void add_lora(const float* x, int64_t n, int64_t in, float* y, int64_t out, int64_t y_stride,
              std::span<const int32_t> adapter_of_row, std::span<const lora_weights> adapters,
              std::vector<float>& scratch) {
  if (static_cast<int64_t>(adapter_of_row.size()) != n)
    throw std::invalid_argument("add_lora: one adapter index per row");
  if (y_stride < out) throw std::invalid_argument("add_lora: a row stride below the row");
  int64_t max_rank = 0;
  for (const auto& w : adapters) max_rank = std::max(max_rank, w.rank);
  for (int32_t k : adapter_of_row)
    if (k < -1 || k >= static_cast<int32_t>(adapters.size()))
      throw std::invalid_argument("add_lora: adapter index " + std::to_string(k) +
                                  " names no adapter");
  if (max_rank == 0) return;
  // Rows are independent: the team splits them, each member with its own rank-sized scratch.
  scratch.resize(static_cast<size_t>(n * max_rank));
  const int64_t grain = std::max<int64_t>(1, 4096 / (max_rank * (in + out)));
  parallel_for(n, grain, 2, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int32_t k = adapter_of_row[r];
      if (k < 0 || adapters[k].rank == 0) continue;
      add_lora_row(x + r * in, in, y + r * y_stride, out, adapters[k],
                   scratch.data() + r * max_rank);
    }
  });
}

}  // namespace actorllm::cpu
