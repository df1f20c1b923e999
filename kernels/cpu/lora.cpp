#include "kernels/cpu/lora.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorllm::cpu {

void add_lora(const float* x, int64_t n, int64_t in, float* y, int64_t out, int64_t y_stride,
              std::span<const int32_t> adapter_of_row, std::span<const lora_weights> adapters,
              std::vector<float>& scratch) {
  if (static_cast<int64_t>(adapter_of_row.size()) != n)
    throw std::invalid_argument("add_lora: one adapter index per row");
  if (y_stride < out) throw std::invalid_argument("add_lora: a row stride below the row");
  for (int32_t k : adapter_of_row)
    if (k < -1 || k >= static_cast<int32_t>(adapters.size()))
      throw std::invalid_argument("add_lora: adapter index " + std::to_string(k) +
                                  " names no adapter");
  std::vector<int64_t> rows;
  for (size_t k = 0; k < adapters.size(); ++k) {
    if (adapters[k].rank == 0) continue;
    // Gather: the rows of adapter k.
    rows.clear();
    for (int64_t r = 0; r < n; ++r)
      if (adapter_of_row[r] == static_cast<int32_t>(k)) rows.push_back(r);
    if (rows.empty()) continue;
    const lora_weights& w = adapters[k];
    const int64_t rank = w.rank;
    scratch.assign(rows.size() * static_cast<size_t>(rank), 0.0f);
    // Shrink: t (rows, rank) = x[rows] Aᵀ, scaled once here rather than on every output.
    for (size_t i = 0; i < rows.size(); ++i) {
      const float* xr = x + rows[i] * in;
      for (int64_t q = 0; q < rank; ++q) {
        const float* aq = w.a + q * in;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < in; ++j) sum += xr[j] * aq[j];
        scratch[i * rank + q] = w.scaling * sum;
      }
    }
    // Expand: y[rows] += t Bᵀ.
    for (size_t i = 0; i < rows.size(); ++i) {
      float* yr = y + rows[i] * y_stride;
      const float* t = scratch.data() + i * rank;
      for (int64_t o = 0; o < out; ++o) {
        const float* bo = w.b + o * rank;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t q = 0; q < rank; ++q) sum += t[q] * bo[q];
        yr[o] += sum;
      }
    }
  }
}

}  // namespace actorllm::cpu
