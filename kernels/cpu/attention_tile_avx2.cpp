// The tile kernel of attention_tile_avx512.cpp for CPUs with AVX2 alone (AMD before Zen 4,
// Intel client cores): the same three passes over the same scratch, each row of sixteen lanes
// held in two 8-float registers. Sixteen registers allow four keys scored at once and four
// dimensions of the sums, where AVX-512's thirty-two allow eight and sixteen.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_item.hpp"
#include "kernels/cpu/attention_vectors.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::detail {

namespace {

constexpr int lanes = attention_tile::lanes;
constexpr int keys_at_once = 4;
constexpr int dims_at_once = 4;

/// Sixteen lanes: [0] the first eight, [1] the last.
struct lanes16 {
  __m256 half[2];
};

/// `count` rows of block b as float32, the rest of the block's rows zero.
template <class T>
ACTORLLM_AVX2 void widen_block(const attention_tile& t, const T* cache, int32_t b, int32_t count,
                               float* rows) {
  const int64_t d = t.head_dim;
  const T* src = cache + t.blocks[b] * t.block_elems + t.head_offset;
  for (int64_t i = 0; i < count * d; i += 8) _mm256_storeu_ps(rows + i, load8(src + i));
  std::fill(rows + count * d, rows + t.block_size * d, 0.0f);
}

/// Pass 1, as the AVX-512 kernel's: scale * q . key where the row sees the key, -inf elsewhere.
template <class T>
ACTORLLM_AVX2 void score_keys(const attention_tile& t, const T* k_cache,
                              const attention_tile_scratch& s) {
  const int64_t d = t.head_dim, bs = t.block_size;
  const int32_t first_block = s.first_block, base = s.base, end = s.end;
  const __m256 scale = _mm256_set1_ps(t.scale);
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  __m256i window_start[2], visible[2];
  for (int h = 0; h < 2; ++h) {
    window_start[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.window_start + 8 * h));
    visible[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.visible + 8 * h));
  }
  for (int32_t b = first_block, first = base; first < end; ++b, first += static_cast<int32_t>(bs)) {
    const int32_t count = std::min<int32_t>(static_cast<int32_t>(bs), end - first);
    widen_block(t, k_cache, b, count, s.rows);
    for (int32_t j = 0; j < bs; j += keys_at_once) {
      float* out = s.scores + (first - base + j) * lanes;
      if (j >= count) {  // past every row's keys
        for (int i = 0; i < keys_at_once * lanes; i += 8) _mm256_storeu_ps(out + i, minus_inf);
        continue;
      }
      lanes16 acc[keys_at_once];
      for (auto& a : acc) a.half[0] = a.half[1] = _mm256_setzero_ps();
      const float* key = s.rows + j * d;
      for (int64_t c = 0; c < d; ++c) {
        const __m256 q0 = _mm256_loadu_ps(s.query + c * lanes);
        const __m256 q1 = _mm256_loadu_ps(s.query + c * lanes + 8);
        for (int k = 0; k < keys_at_once; ++k) {
          const __m256 x = _mm256_broadcast_ss(key + k * d + c);
          acc[k].half[0] = _mm256_fmadd_ps(x, q0, acc[k].half[0]);
          acc[k].half[1] = _mm256_fmadd_ps(x, q1, acc[k].half[1]);
        }
      }
      for (int k = 0; k < keys_at_once; ++k) {
        const __m256i position = _mm256_set1_epi32(first + j + k);
        for (int h = 0; h < 2; ++h) {
          // window_start <= position < visible
          const __m256i sees = _mm256_andnot_si256(_mm256_cmpgt_epi32(window_start[h], position),
                                                   _mm256_cmpgt_epi32(visible[h], position));
          _mm256_storeu_ps(out + k * lanes + 8 * h,
                           _mm256_blendv_ps(minus_inf, _mm256_mul_ps(acc[k].half[h], scale),
                                            _mm256_castsi256_ps(sees)));
        }
      }
    }
  }
}

/// Pass 2: e^(score - the lane's max) in place; 1 / each lane's sum into `inverse_sum`.
ACTORLLM_AVX2 void exponentiate(float* scores, int64_t keys, float* inverse_sum) {
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  for (int h = 0; h < 2; ++h) {
    float* column = scores + 8 * h;
    __m256 best = minus_inf;
    for (int64_t k = 0; k < keys; ++k)
      best = _mm256_max_ps(best, _mm256_loadu_ps(column + k * lanes));
    best = _mm256_blendv_ps(best, _mm256_setzero_ps(), _mm256_cmp_ps(best, minus_inf, _CMP_EQ_OQ));
    __m256 sum = _mm256_setzero_ps();
    for (int64_t k = 0; k < keys; ++k) {
      const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(column + k * lanes), best));
      _mm256_storeu_ps(column + k * lanes, e);
      sum = _mm256_add_ps(sum, e);
    }
    _mm256_storeu_ps(inverse_sum + 8 * h, _mm256_div_ps(_mm256_set1_ps(1.0f), sum));
  }
}

/// Pass 3: sums[c][lane] += weights[k][lane] * value_k[c], four dimensions at a time.
template <class T>
ACTORLLM_AVX2 void weigh_values(const attention_tile& t, const T* v_cache,
                                const attention_tile_scratch& s) {
  const int64_t d = t.head_dim, bs = t.block_size;
  const int32_t first_block = s.first_block, base = s.base, end = s.end;
  std::fill(s.sums, s.sums + d * lanes, 0.0f);
  for (int32_t b = first_block, first = base; first < end; ++b, first += static_cast<int32_t>(bs)) {
    const int32_t count = std::min<int32_t>(static_cast<int32_t>(bs), end - first);
    widen_block(t, v_cache, b, count, s.rows);
    const float* weights = s.scores + (first - base) * lanes;
    for (int64_t c0 = 0; c0 < d; c0 += dims_at_once) {
      lanes16 acc[dims_at_once];
      for (int c = 0; c < dims_at_once; ++c)
        for (int h = 0; h < 2; ++h)
          acc[c].half[h] = _mm256_loadu_ps(s.sums + (c0 + c) * lanes + 8 * h);
      for (int32_t j = 0; j < count; ++j) {
        const __m256 w0 = _mm256_loadu_ps(weights + j * lanes);
        const __m256 w1 = _mm256_loadu_ps(weights + j * lanes + 8);
        const float* value = s.rows + j * d + c0;
        for (int c = 0; c < dims_at_once; ++c) {
          const __m256 x = _mm256_broadcast_ss(value + c);
          acc[c].half[0] = _mm256_fmadd_ps(x, w0, acc[c].half[0]);
          acc[c].half[1] = _mm256_fmadd_ps(x, w1, acc[c].half[1]);
        }
      }
      for (int c = 0; c < dims_at_once; ++c)
        for (int h = 0; h < 2; ++h)
          _mm256_storeu_ps(s.sums + (c0 + c) * lanes + 8 * h, acc[c].half[h]);
    }
  }
}

template <class T>
ACTORLLM_AVX2 void attend(const attention_tile& t, const T* k_cache, const T* v_cache,
                          float* scratch) {
  const int64_t d = t.head_dim;
  const auto s = attention_tile_scratch::lay_out(t, scratch);
  s.transpose_queries(t);
  score_keys(t, k_cache, s);
  if (t.softcap > 0) softcap_scores(s.scores, s.keys * lanes, t.softcap);
  float inverse_sum[lanes];
  exponentiate(s.scores, s.keys, inverse_sum);
  weigh_values(t, v_cache, s);
  for (int64_t c = 0; c < d; ++c)
    for (int l = 0; l < t.rows; ++l) t.out[l][c] = s.sums[c * lanes + l] * inverse_sum[l];
}

}  // namespace

void attend_tile_avx2(const attention_tile& tile, const float* k_cache, const float* v_cache,
                      float* scratch) {
  attend(tile, k_cache, v_cache, scratch);
}

void attend_tile_avx2(const attention_tile& tile, const half* k_cache, const half* v_cache,
                      float* scratch) {
  attend(tile, k_cache, v_cache, scratch);
}

void attend_tile_avx2(const attention_tile& tile, const float8_e4m3* k_cache,
                      const float8_e4m3* v_cache, float* scratch) {
  attend(tile, k_cache, v_cache, scratch);
}

}  // namespace actorllm::cpu::detail
