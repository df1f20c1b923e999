// The AVX-512 attention item: the AVX2 kernel's three passes (attention_avx2.cpp) with 16-float
// registers. Keys are still scored eight at a time, each key's dot product over head_dim taken
// 16 floats a step and folded to eight before the shared eight-way sum; the exp runs on 16
// scores at a time; values are summed 16 dimensions to a register.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_item.hpp"
#include "kernels/cpu/attention_vectors.hpp"
#include "kernels/cpu/vector_math.hpp"

// GCC 12's AVX-512 conversion intrinsics pass an _mm512_undefined_* operand that its own
// analysis then calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace actorllm::cpu::detail {

namespace {

/// Pass 1, as the AVX2 kernel's: scores[g][k - base] = scale * q_g . key_k for window_start <=
/// k < visible, and -inf elsewhere up to the row's padded end.
template <class T>
ACTORLLM_AVX512 void score_keys(const attention_item& item, const T* k_cache, float* scores,
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
      const __m256 live = _mm256_and_ps(
          _mm256_cmp_ps(lane, _mm256_set1_ps(float(count - j)), _CMP_LT_OQ),
          _mm256_cmp_ps(lane, _mm256_set1_ps(float(item.window_start - first - j)), _CMP_GE_OQ));
      for (int64_t g = 0; g < item.group; ++g) {
        const float* q = item.query + g * d;
        __m512 partial[8];
        for (auto& p : partial) p = _mm512_setzero_ps();
        for (int64_t c = 0; c < d; c += 16) {
          const __m512 qc = _mm512_loadu_ps(q + c);
          for (int k = 0; k < 8; ++k)
            partial[k] = _mm512_fmadd_ps(qc, load16(tile + k * d + c), partial[k]);
        }
        __m256 folded[8];
        for (int k = 0; k < 8; ++k) folded[k] = fold(partial[k]);
        const __m256 s = _mm256_blendv_ps(minus_inf, _mm256_mul_ps(sum_each(folded), scale), live);
        _mm256_storeu_ps(scores + g * row_stride + (first - base) + j, s);
      }
    }
  }
}

/// Pass 2: each row becomes e^(score - max), returned as 1 / (sum of the row). `padded` is a
/// multiple of 8: the last eight scores, if any, go through a half mask.
ACTORLLM_AVX512 float exponentiate_row(float* row, int64_t padded) {
  const int64_t whole = padded / 16 * 16;
  const __mmask16 tail = padded > whole ? __mmask16(0x00ff) : __mmask16(0);
  const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
  __m512 best = _mm512_mask_loadu_ps(minus_inf, tail, row + whole);
  for (int64_t i = 0; i < whole; i += 16) best = _mm512_max_ps(best, _mm512_loadu_ps(row + i));
  const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(best));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < whole; i += 16) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(row + i), shift));
    _mm512_storeu_ps(row + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail) {
    const __m512 e =
        exp_nonpositive(_mm512_sub_ps(_mm512_mask_loadu_ps(minus_inf, tail, row + whole), shift));
    _mm512_mask_storeu_ps(row + whole, tail, e);
    sum = _mm512_add_ps(sum, e);  // the masked-off lanes are e^-inf = 0
  }
  return 1.0f / _mm512_reduce_add_ps(sum);
}

/// Pass 3: dst = inverse_sum * sum_k weights[k] * value_k for one query head. Chunks is
/// head_dim / 16 when known at compile time (the sums stay in registers), 0 when not; short
/// rows keep several sets of sums, keys taking turns, as the AVX2 kernel does.
template <int Chunks, class T>
ACTORLLM_AVX512 void weigh_values(const attention_item& item, const T* v_cache,
                                  const float* weights, float inverse_sum, float* dst) {
  const int64_t d = item.head_dim;
  const __m512 inverse = _mm512_set1_ps(inverse_sum);
  if constexpr (Chunks == 0) {
    std::fill(dst, dst + d, 0.0f);
    for (int32_t b = item.first_block(), first = 0; first < item.visible - item.base();
         ++b, first += item.block_size) {
      const T* values = item.rows_in_block(v_cache, b);
      const int32_t count = std::min<int32_t>(item.block_size, item.visible - item.base() - first);
      const T* next_values = item.rows_in_next_block(v_cache, b, first, item.visible - item.base());
      for (int32_t j = 0; j < count; ++j) {
        if (next_values) prefetch_rows(next_values + j * d, d * int64_t(sizeof(T)));
        const __m512 w = _mm512_set1_ps(weights[first + j]);
        for (int64_t c = 0; c < d; c += 16)
          _mm512_storeu_ps(
              dst + c, _mm512_fmadd_ps(w, load16(values + j * d + c), _mm512_loadu_ps(dst + c)));
      }
    }
    for (int64_t c = 0; c < d; c += 16)
      _mm512_storeu_ps(dst + c, _mm512_mul_ps(_mm512_loadu_ps(dst + c), inverse));
  } else {
    constexpr int sets = Chunks >= 4 ? 1 : 4 / Chunks;
    __m512 acc[sets][Chunks];
    for (auto& set : acc)
      for (auto& a : set) a = _mm512_setzero_ps();
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
          const __m512 w = _mm512_set1_ps(weights[first + j + s]);
          for (int c = 0; c < Chunks; ++c)
            acc[s][c] = _mm512_fmadd_ps(w, load16(values + (j + s) * d + 16 * c), acc[s][c]);
        }
      }
      for (; j < count; ++j) {
        const __m512 w = _mm512_set1_ps(weights[first + j]);
        for (int c = 0; c < Chunks; ++c)
          acc[0][c] = _mm512_fmadd_ps(w, load16(values + j * d + 16 * c), acc[0][c]);
      }
    }
    for (int c = 0; c < Chunks; ++c) {
      __m512 sum = acc[0][c];
      for (int s = 1; s < sets; ++s) sum = _mm512_add_ps(sum, acc[s][c]);
      _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(sum, inverse));
    }
  }
}

template <class T>
ACTORLLM_AVX512 void attend(const attention_item& item, const T* k_cache, const T* v_cache,
                            float* scratch) {
  const int64_t row_stride = item.row_stride();
  score_keys(item, k_cache, scratch, row_stride);
  for (int64_t g = 0; g < item.group; ++g) {
    float* weights = scratch + g * row_stride;
    if (item.softcap > 0) softcap_scores(weights, row_stride, item.softcap);
    const float inverse_sum = exponentiate_row(weights, row_stride);
    float* dst = item.out + g * item.head_dim;
    switch (item.head_dim / 16) {
      case 1:
        weigh_values<1>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 2:
        weigh_values<2>(item, v_cache, weights, inverse_sum, dst);
        break;
      case 4:
        weigh_values<4>(item, v_cache, weights, inverse_sum, dst);
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

bool avx512_attention_usable(int64_t head_dim, int64_t block_size) {
  return cpu_has_avx512() && head_dim % 16 == 0 && block_size % 8 == 0;
}

void attend_avx512(const attention_item& item, const float* k_cache, const float* v_cache,
                   float* scratch) {
  attend(item, k_cache, v_cache, scratch);
}

void attend_avx512(const attention_item& item, const half* k_cache, const half* v_cache,
                   float* scratch) {
  attend(item, k_cache, v_cache, scratch);
}

void attend_avx512(const attention_item& item, const float8_e4m3* k_cache,
                   const float8_e4m3* v_cache, float* scratch) {
  attend(item, k_cache, v_cache, scratch);
}

}  // namespace actorllm::cpu::detail
