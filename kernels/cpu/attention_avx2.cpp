// The AVX2 attention item: scores for eight keys at a time (eight dot products folded into one
// register), the shifted scores through a vectorized exp, and the weighted values summed in
// registers. Three passes over the scores keep each one a plain vector loop.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_item.hpp"
#include "kernels/cpu/attention_vectors.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::detail {

namespace {

/// Pass 1: scores[g][k - base] = scale * q_g . key_k for window_start <= k < visible, and -inf
/// elsewhere up to the row's padded end. A block's keys are read eight rows at a time; rows
/// past `visible` in the last block, or before the window in the first, are read (they lie
/// inside the block) but their lanes are replaced, NaN or not.
template <class T>
ACTORLLM_AVX2 void score_keys(const attention_item& item, const T* k_cache, float* scores,
                              int64_t row_stride) {
  const int64_t d = item.head_dim;
  const __m256 scale = _mm256_set1_ps(item.scale);
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  const int32_t base = item.base();
  for (int32_t b = item.first_block(), first = base; first < item.visible;
       ++b, first += item.block_size) {
    const T* keys = item.rows_in_block(k_cache, b);
    const int32_t count = std::min<int32_t>(item.block_size, item.visible - first);
    // Each tile of keys asks for the same tile of the next block.
    const T* next_keys = item.rows_in_next_block(k_cache, b, first, item.visible);
    for (int32_t j = 0; j < count; j += 8) {
      const T* tile = keys + j * d;
      if (next_keys) prefetch_rows(next_keys + j * d, 8 * d * int64_t(sizeof(T)));
      // Live lanes: keys before `visible` and not before the window's start.
      const __m256 live = _mm256_and_ps(
          _mm256_cmp_ps(lane, _mm256_set1_ps(float(count - j)), _CMP_LT_OQ),
          _mm256_cmp_ps(lane, _mm256_set1_ps(float(item.window_start - first - j)), _CMP_GE_OQ));
      for (int64_t g = 0; g < item.group; ++g) {
        const float* q = item.query + g * d;
        __m256 partial[8];
        for (auto& p : partial) p = _mm256_setzero_ps();
        for (int64_t c = 0; c < d; c += 8) {
          const __m256 qc = _mm256_loadu_ps(q + c);
          for (int k = 0; k < 8; ++k)
            partial[k] = _mm256_fmadd_ps(qc, load8(tile + k * d + c), partial[k]);
        }
        const __m256 s = _mm256_blendv_ps(minus_inf, _mm256_mul_ps(sum_each(partial), scale), live);
        _mm256_storeu_ps(scores + g * row_stride + (first - base) + j, s);
      }
    }
  }
}

/// Pass 2: each row becomes e^(score - max), returned as 1 / (sum of the row).
ACTORLLM_AVX2 float exponentiate_row(float* row, int64_t padded) {
  __m256 best = _mm256_set1_ps(-INFINITY);
  for (int64_t i = 0; i < padded; i += 8) best = _mm256_max_ps(best, _mm256_loadu_ps(row + i));
  const __m256 shift = _mm256_set1_ps(max_of(best));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < padded; i += 8) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(row + i), shift));
    _mm256_storeu_ps(row + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  return 1.0f / sum_of(sum);
}

/// Pass 3: dst = inverse_sum * sum_k weights[k] * value_k for one query head. Chunks is
/// head_dim / 8 when known at compile time (the sums stay in registers), 0 when not. Short
/// rows keep several sets of sums, keys taking turns, so that consecutive FMAs do not wait on
/// each other.
template <int Chunks, class T>
ACTORLLM_AVX2 void weigh_values(const attention_item& item, const T* v_cache, const float* weights,
                                float inverse_sum, float* dst) {
  const int64_t d = item.head_dim;
  if constexpr (Chunks == 0) {
    std::fill(dst, dst + d, 0.0f);
    for (int32_t b = item.first_block(), first = 0; first < item.visible - item.base();
         ++b, first += item.block_size) {
      const T* values = item.rows_in_block(v_cache, b);
      const int32_t count = std::min<int32_t>(item.block_size, item.visible - item.base() - first);
      const T* next_values = item.rows_in_next_block(v_cache, b, first, item.visible - item.base());
      for (int32_t j = 0; j < count; ++j) {
        if (next_values) prefetch_rows(next_values + j * d, d * int64_t(sizeof(T)));
        const __m256 w = _mm256_broadcast_ss(weights + first + j);
        for (int64_t c = 0; c < d; c += 8)
          _mm256_storeu_ps(dst + c,
                           _mm256_fmadd_ps(w, load8(values + j * d + c), _mm256_loadu_ps(dst + c)));
      }
    }
    const __m256 inverse = _mm256_set1_ps(inverse_sum);
    for (int64_t c = 0; c < d; c += 8)
      _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_loadu_ps(dst + c), inverse));
  } else {
    constexpr int sets = Chunks >= 4 ? 1 : 4 / Chunks;
    __m256 acc[sets][Chunks];
    for (auto& set : acc)
      for (auto& a : set) a = _mm256_setzero_ps();
    // `first` counts from base(): weights are indexed from there.
    for (int32_t b = item.first_block(), first = 0; first < item.visible - item.base();
         ++b, first += item.block_size) {
      const T* values = item.rows_in_block(v_cache, b);
      const int32_t count = std::min<int32_t>(item.block_size, item.visible - item.base() - first);
      // Each key's row asks for its row in the next block.
      const T* next_values = item.rows_in_next_block(v_cache, b, first, item.visible - item.base());
      int32_t j = 0;
      for (; j + sets <= count; j += sets) {
        if (next_values) prefetch_rows(next_values + j * d, sets * d * int64_t(sizeof(T)));
        for (int s = 0; s < sets; ++s) {
          const __m256 w = _mm256_broadcast_ss(weights + first + j + s);
          for (int c = 0; c < Chunks; ++c)
            acc[s][c] = _mm256_fmadd_ps(w, load8(values + (j + s) * d + 8 * c), acc[s][c]);
        }
      }
      for (; j < count; ++j) {
        const __m256 w = _mm256_broadcast_ss(weights + first + j);
        for (int c = 0; c < Chunks; ++c)
          acc[0][c] = _mm256_fmadd_ps(w, load8(values + j * d + 8 * c), acc[0][c]);
      }
    }
    const __m256 inverse = _mm256_set1_ps(inverse_sum);
    for (int c = 0; c < Chunks; ++c) {
      __m256 sum = acc[0][c];
      for (int s = 1; s < sets; ++s) sum = _mm256_add_ps(sum, acc[s][c]);
      _mm256_storeu_ps(dst + 8 * c, _mm256_mul_ps(sum, inverse));
    }
  }
}

template <class T>
ACTORLLM_AVX2 void attend(const attention_item& item, const T* k_cache, const T* v_cache,
                          float* scratch) {
  const int64_t row_stride = item.row_stride();
  score_keys(item, k_cache, scratch, row_stride);
  for (int64_t g = 0; g < item.group; ++g) {
    float* weights = scratch + g * row_stride;
    if (item.softcap > 0) softcap_scores(weights, row_stride, item.softcap);
    const float inverse_sum = exponentiate_row(weights, row_stride);
    float* dst = item.out + g * item.head_dim;
    switch (item.head_dim / 8) {
      case 1:
        weigh_values<1>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 2:
        weigh_values<2>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 4:
        weigh_values<4>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 6:
        weigh_values<6>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 8:
        weigh_values<8>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 16:
        weigh_values<16>(item, v_cache, weights, inverse_sum, dst);
        break;
      default:
        weigh_values<0>(item, v_cache, weights, inverse_sum, dst);
        break;
    }
  }
}

}  // namespace

bool avx2_attention_usable(int64_t head_dim, int64_t block_size) {
  return cpu_has_avx2() && head_dim % 8 == 0 && block_size % 8 == 0;
}

void attend_avx2(const attention_item& item, const float* k_cache, const float* v_cache,
                 float* scratch) {
  attend(item, k_cache, v_cache, scratch);
}

void attend_avx2(const attention_item& item, const half* k_cache, const half* v_cache,
                 float* scratch) {
  attend(item, k_cache, v_cache, scratch);
}

void attend_avx2(const attention_item& item, const float8_e4m3* k_cache, const float8_e4m3* v_cache,
                 float* scratch) {
  attend(item, k_cache, v_cache, scratch);
}

}  // namespace actorllm::cpu::detail
