// A prefill chunk's attention, sixteen query rows at a time (attention_tile): the rows are the
// lanes of a register, so each key and value row is widened to float32 once for all of them
// and every multiply-add serves sixteen rows, where the one-row kernel (attention_avx512.cpp)
// widens each row again for every query and folds each dot product across lanes. Three passes,
// as there: the scores of every key (key-major, sixteen a key), a softmax down each lane, the
// values weighted into sums kept transposed (a head dimension per register).
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/attention_item.hpp"
#include "kernels/cpu/attention_vectors.hpp"
#include "kernels/cpu/vector_math.hpp"

// GCC 12's AVX-512 intrinsics pass an _mm512_undefined_* operand that its own analysis then
// calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace actorllm::cpu::detail {

namespace {

constexpr int lanes = attention_tile::lanes;

/// Keys scored together: one register of sixteen rows' scores each.
constexpr int keys_at_once = 8;

/// `count` rows of block b into `rows` as float32; the rest of the block's rows zero (they lie past
/// every row's keys: their scores are masked, their weights 0).
template <class T>
ACTORLLM_AVX512 void widen_block(const attention_tile& t, const T* cache, int32_t b, int32_t count,
                                 float* rows) {
  const int64_t d = t.head_dim;
  const T* src = cache + t.blocks[b] * t.block_elems + t.head_offset;
  for (int64_t i = 0; i < count * d; i += 16) _mm512_storeu_ps(rows + i, load16(src + i));
  std::fill(rows + count * d, rows + t.block_size * d, 0.0f);
}

/// Pass 1: scores[k][lane] = scale * q_lane . key_k where window_start <= key < visible for the
/// lane's row, -inf elsewhere.
template <class T>
ACTORLLM_AVX512 void score_keys(const attention_tile& t, const T* k_cache,
                                const attention_tile_scratch& s) {
  const int64_t d = t.head_dim, bs = t.block_size;
  const int32_t first_block = s.first_block, base = s.base, end = s.end;
  const __m512i window_start = _mm512_loadu_si512(t.window_start);
  const __m512i visible = _mm512_loadu_si512(t.visible);
  const __m512 scale = _mm512_set1_ps(t.scale);
  const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
  for (int32_t b = first_block, first = base; first < end; ++b, first += static_cast<int32_t>(bs)) {
    const int32_t count = std::min<int32_t>(static_cast<int32_t>(bs), end - first);
    widen_block(t, k_cache, b, count, s.rows);
    for (int32_t j = 0; j < count; j += keys_at_once) {  // bs is a multiple of 8
      __m512 acc[keys_at_once];
      for (auto& a : acc) a = _mm512_setzero_ps();
      const float* key = s.rows + j * d;
      for (int64_t c = 0; c < d; ++c) {
        const __m512 q = _mm512_loadu_ps(s.query + c * lanes);
        for (int k = 0; k < keys_at_once; ++k)
          acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(key[k * d + c]), q, acc[k]);
      }
      for (int k = 0; k < keys_at_once; ++k) {
        const __m512i position = _mm512_set1_epi32(first + j + k);
        const __mmask16 sees = _mm512_cmpge_epi32_mask(position, window_start) &
                               _mm512_cmplt_epi32_mask(position, visible);
        _mm512_storeu_ps(s.scores + (first - base + j + k) * lanes,
                         _mm512_mask_mul_ps(minus_inf, sees, acc[k], scale));
      }
    }
    // Keys past `count` in the last block: no row sees them.
    for (int32_t j = (count + keys_at_once - 1) / keys_at_once * keys_at_once; j < bs; ++j)
      _mm512_storeu_ps(s.scores + (first - base + j) * lanes, minus_inf);
  }
}

/// Pass 2: each lane's scores become e^(score - its max); returns 1 / each lane's sum (a lane
/// that sees no key, an unused one, gets zeros and is never written out).
ACTORLLM_AVX512 __m512 exponentiate(float* scores, int64_t keys) {
  __m512 best = _mm512_set1_ps(-INFINITY);
  for (int64_t k = 0; k < keys; ++k)
    best = _mm512_max_ps(best, _mm512_loadu_ps(scores + k * lanes));
  best = _mm512_mask_mov_ps(best, _mm512_cmpeq_ps_mask(best, _mm512_set1_ps(-INFINITY)),
                            _mm512_setzero_ps());
  __m512 sum = _mm512_setzero_ps();
  for (int64_t k = 0; k < keys; ++k) {
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_loadu_ps(scores + k * lanes), best));
    _mm512_storeu_ps(scores + k * lanes, e);
    sum = _mm512_add_ps(sum, e);
  }
  return _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
}

/// Pass 3: sums[c][lane] = sum_k weights[k][lane] * value_k[c], sixteen dimensions of the sums
/// in registers while a block's values go by.
template <class T>
ACTORLLM_AVX512 void weigh_values(const attention_tile& t, const T* v_cache,
                                  const attention_tile_scratch& s) {
  const int64_t d = t.head_dim, bs = t.block_size;
  const int32_t first_block = s.first_block, base = s.base, end = s.end;
  std::fill(s.sums, s.sums + d * lanes, 0.0f);
  for (int32_t b = first_block, first = base; first < end; ++b, first += static_cast<int32_t>(bs)) {
    const int32_t count = std::min<int32_t>(static_cast<int32_t>(bs), end - first);
    widen_block(t, v_cache, b, count, s.rows);
    const float* weights = s.scores + (first - base) * lanes;
    for (int64_t c0 = 0; c0 < d; c0 += 16) {
      __m512 acc[16];
      for (int c = 0; c < 16; ++c) acc[c] = _mm512_loadu_ps(s.sums + (c0 + c) * lanes);
      for (int32_t j = 0; j < count; ++j) {
        const __m512 w = _mm512_loadu_ps(weights + j * lanes);
        const float* value = s.rows + j * d + c0;
        for (int c = 0; c < 16; ++c) acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(value[c]), w, acc[c]);
      }
      for (int c = 0; c < 16; ++c) _mm512_storeu_ps(s.sums + (c0 + c) * lanes, acc[c]);
    }
  }
}

template <class T>
ACTORLLM_AVX512 void attend(const attention_tile& t, const T* k_cache, const T* v_cache,
                            float* scratch) {
  const int64_t d = t.head_dim;
  const auto s = attention_tile_scratch::lay_out(t, scratch);
  s.transpose_queries(t);
  score_keys(t, k_cache, s);
  if (t.softcap > 0) softcap_scores(s.scores, s.keys * lanes, t.softcap);
  const __m512 inverse_sum = exponentiate(s.scores, s.keys);
  weigh_values(t, v_cache, s);
  alignas(64) float row[lanes];
  for (int64_t c = 0; c < d; ++c) {
    _mm512_store_ps(row, _mm512_mul_ps(_mm512_loadu_ps(s.sums + c * lanes), inverse_sum));
    for (int l = 0; l < t.rows; ++l) t.out[l][c] = row[l];
  }
}

}  // namespace

void attend_tile_avx512(const attention_tile& tile, const float* k_cache, const float* v_cache,
                        float* scratch) {
  attend(tile, k_cache, v_cache, scratch);
}

void attend_tile_avx512(const attention_tile& tile, const half* k_cache, const half* v_cache,
                        float* scratch) {
  attend(tile, k_cache, v_cache, scratch);
}

void attend_tile_avx512(const attention_tile& tile, const float8_e4m3* k_cache,
                        const float8_e4m3* v_cache, float* scratch) {
  attend(tile, k_cache, v_cache, scratch);
}

}  // namespace actorllm::cpu::detail
