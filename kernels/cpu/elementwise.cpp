// Row-wise CPU ops: embedding, RMSNorm (plain and fused with the residual add),
// SiLU-and-mul, log-softmax. Rows are independent, so rows are split across threads.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu {

void embedding(const float* table, const int32_t* ids, int64_t n, int64_t dim, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out + i * dim, table + static_cast<int64_t>(ids[i]) * dim, dim * sizeof(float));
  }
}

namespace {

/// Row loops of at most this many rows run on the caller: a wake-up costs more.
constexpr int64_t serial_rows = 4;

inline float inverse_rms(const float* x, int64_t dim, float eps) {
  float sum_sq = 0.0f;
#pragma omp simd reduction(+ : sum_sq)
  for (int64_t j = 0; j < dim; ++j) sum_sq += x[j] * x[j];
  return 1.0f / std::sqrt(sum_sq / static_cast<float>(dim) + eps);
}

}  // namespace

void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out) {
  parallel_for(n, 1, serial_rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* row = x + i * dim;
      float* dst = out + i * dim;
      const float scale = inverse_rms(row, dim, eps);
#pragma omp simd
      for (int64_t j = 0; j < dim; ++j) dst[j] = row[j] * scale * weight[j];
    }
  });
}

void fused_add_rms_norm(float* x, float* residual, const float* weight, int64_t n, int64_t dim,
                        float eps) {
  parallel_for(n, 1, serial_rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* row = x + i * dim;
      float* res = residual + i * dim;
#pragma omp simd
      for (int64_t j = 0; j < dim; ++j) res[j] += row[j];
      const float scale = inverse_rms(res, dim, eps);
#pragma omp simd
      for (int64_t j = 0; j < dim; ++j) row[j] = res[j] * scale * weight[j];
    }
  });
}

namespace {

/// dst[j] = silu(gate[j]) * up[j] for j in [begin, hidden): one at a time, any CPU.
void silu_times_portable(const float* gate, const float* up, int64_t begin, int64_t hidden,
                         float* dst) {
  for (int64_t j = begin; j < hidden; ++j) dst[j] = gate[j] / (1.0f + std::exp(-gate[j])) * up[j];
}

/// The same eight at a time (a vectorized exp), the tail one at a time.
ACTORLLM_AVX2 void silu_times_avx2(const float* gate, const float* up, int64_t hidden, float* dst) {
  int64_t j = 0;
  for (; j + 8 <= hidden; j += 8)
    _mm256_storeu_ps(dst + j, silu_times(_mm256_loadu_ps(gate + j), _mm256_loadu_ps(up + j)));
  silu_times_portable(gate, up, j, hidden, dst);
}

}  // namespace

void silu_and_mul(const float* gate_up, int64_t n, int64_t hidden, float* out) {
  const bool avx2 = cpu_has_avx2();
  parallel_for(n, 1, serial_rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* gate = gate_up + i * 2 * hidden;
      const float* up = gate + hidden;
      float* dst = out + i * hidden;
      if (avx2)
        silu_times_avx2(gate, up, hidden, dst);
      else
        silu_times_portable(gate, up, 0, hidden, dst);
    }
  });
}

void gelu_tanh_and_mul(const float* gate_up, int64_t n, int64_t hidden, float* out) {
  constexpr float sqrt_2_over_pi = 0.7978845608028654f;
  parallel_for(n, 1, serial_rows, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* gate = gate_up + i * 2 * hidden;
      const float* up = gate + hidden;
      float* dst = out + i * hidden;
      for (int64_t j = 0; j < hidden; ++j) {
        const float x = gate[j];
        const float inner = sqrt_2_over_pi * (x + 0.044715f * x * x * x);
        dst[j] = 0.5f * x * (1.0f + std::tanh(inner)) * up[j];
      }
    }
  });
}

void softcap(float* values, int64_t count, float cap) {
  for (int64_t i = 0; i < count; ++i) values[i] = cap * std::tanh(values[i] / cap);
}

void log_softmax(const float* logits, int64_t n, int64_t vocab, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * vocab;
    float* dst = out + i * vocab;
    const float max_logit = *std::max_element(row, row + vocab);
    double sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(row[j] - max_logit));
    const float log_sum = static_cast<float>(std::log(sum)) + max_logit;
    for (int64_t j = 0; j < vocab; ++j) dst[j] = row[j] - log_sum;
  }
}

}  // namespace actorllm::cpu
