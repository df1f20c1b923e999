// The packed GEMM's integer path on AVX2 (the avx2_int8 set): the int8 activations of
// int8_activations.cpp meet each panel's int8 or 4-bit codes in vpmaddubsw dot products
// (unsigned by signed bytes, adjacent pairs summed into 16 bits), which vpmaddwd then sums by
// pairs into 32 bits: four input features of 8 output features per register and step, as
// llama.cpp's AVX2 Q8_0 and Q4_0 dot products compute them.
//
// vpmaddubsw takes one unsigned operand: 4-bit codes are unsigned already; int8 codes go in
// as |w| against x with w's sign (vpsignb), so that no pair sum can leave 16 bits
// (2 x 128 x 127 < 32768).
//
// Panels keep their layout (16 features per input feature). Byte and word unpacks regroup
// four panel rows into two registers of four features deep each: features 0-3 and 8-11 in
// the first, 4-7 and 12-15 in the second; the scales and zero points are read in that order,
// and the sums go back to feature order once per panel.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/packed_tiles.hpp"

#define ACTORLLM_AVX2_INT8 __attribute__((target("avx2,fma,f16c")))

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t width = packed_matrix::panel_width;
constexpr int64_t block = int8_activations::block;
/// How far ahead of the block being read its codes are prefetched (as the VNNI path).
constexpr int64_t prefetch_bytes = 2048;

/// Four features deep for 16 features, in the regrouped order (see the top of the file).
struct codes16 {
  __m256i first;   ///< features 0-3 | 8-11, four codes each
  __m256i second;  ///< features 4-7 | 12-15
};

/// Rows r0..r3 as pairs (r0 r1) and (r2 r3) of each feature's bytes, features 0-7 in `low`
/// (r0r1 | r2r3 by 128-bit lane) and 8-15 in `high`, to four features deep.
ACTORLLM_AVX2_INT8 inline codes16 interleave_pairs(__m256i low, __m256i high) {
  const __m256i near = _mm256_permute2x128_si256(low, high, 0x20);  // (r0 r1): f0-7 | f8-15
  const __m256i far = _mm256_permute2x128_si256(low, high, 0x31);   // (r2 r3): f0-7 | f8-15
  return {_mm256_unpacklo_epi16(near, far), _mm256_unpackhi_epi16(near, far)};
}

/// Four panel rows from row k: signed int8 (q8), or 0..15 (q4).
template <weight_format F>
ACTORLLM_AVX2_INT8 inline codes16 codes4(const void* panel, int64_t k) {
  if constexpr (F == weight_format::q8) {
    const auto* rows = static_cast<const int8_t*>(panel) + k * width;
    const __m256i r01 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows));
    const __m256i r23 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows + 2 * width));
    const __m256i r02 = _mm256_permute2x128_si256(r01, r23, 0x20);
    const __m256i r13 = _mm256_permute2x128_si256(r01, r23, 0x31);
    // Byte pairs (r0 r1) in the low lane and (r2 r3) in the high one.
    return interleave_pairs(_mm256_unpacklo_epi8(r02, r13), _mm256_unpackhi_epi8(r02, r13));
  } else {
    // Four 8-byte rows, byte f % 8 holding feature f (low nibble for 0-7, high for 8-15).
    const __m256i rows = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const uint8_t*>(panel) + k * (width / 2)));
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i low = _mm256_and_si256(rows, nibble);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(rows, 4), nibble);
    // Within each lane: bytes of rows (r0, r1) [or (r2, r3)] feature by feature.
    const __m256i pairs = _mm256_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 0,
                                           8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    return interleave_pairs(_mm256_shuffle_epi8(low, pairs), _mm256_shuffle_epi8(high, pairs));
  }
}

/// 16 floats from feature order to the regrouped one.
struct floats16 {
  __m256 first, second;
};
ACTORLLM_AVX2_INT8 inline floats16 regrouped(const float* v) {
  const __m256 low = _mm256_loadu_ps(v), high = _mm256_loadu_ps(v + 8);
  return {_mm256_permute2f128_ps(low, high, 0x20), _mm256_permute2f128_ps(low, high, 0x31)};
}

/// 16 float16 scales as floats in the regrouped order.
ACTORLLM_AVX2_INT8 inline floats16 regrouped_halves(const uint16_t* v) {
  const __m256 low = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v)));
  const __m256 high = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 8)));
  return {_mm256_permute2f128_ps(low, high, 0x20), _mm256_permute2f128_ps(low, high, 0x31)};
}

/// 16 zero points (bytes) as floats in the regrouped order.
ACTORLLM_AVX2_INT8 inline floats16 regrouped_zeros(const uint8_t* zeros) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(zeros));
  const __m256 low = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  const __m256 high = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
  return {_mm256_permute2f128_ps(low, high, 0x20), _mm256_permute2f128_ps(low, high, 0x31)};
}

/// The 32-bit dot products of four codes per lane with x's four codes `four`.
template <weight_format F>
ACTORLLM_AVX2_INT8 inline __m256i dot4(__m256i codes, __m256i magnitudes, __m256i four) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (F == weight_format::q8)
    return _mm256_madd_epi16(_mm256_maddubs_epi16(magnitudes, _mm256_sign_epi8(four, codes)), ones);
  else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(codes, four), ones);
}

/// y rows [0, ROWS) of one panel: sum over blocks b of x's scale_b * (the group's scale *
/// (dot_b - zero * x's code sum_b)), where dot_b is the integer dot product of the block.
template <weight_format F, int ROWS>
ACTORLLM_AVX2_INT8 void dot_panel(const int8_activations& x, const packed_matrix& w,
                                  int64_t panel_index, const float* bias, int64_t cols, float* y,
                                  int64_t ldy) {
  const int64_t in = w.in_features, groups = w.num_groups(), group = w.group_length();
  const void* panel =
      F == weight_format::q8
          ? static_cast<const void*>(w.panels8.data() + panel_index * in * width)
          : static_cast<const void*>(w.panels4.data() + panel_index * in * (width / 2));
  const int64_t blocks = in / block;
  const __m256 common_zero = _mm256_set1_ps(static_cast<float>(w.common_zero));
  __m256 total[ROWS][2];
  for (auto& t : total) t[0] = t[1] = _mm256_setzero_ps();
  constexpr int64_t block_bytes = block * (F == weight_format::q8 ? width : width / 2);
  const auto* panel_bytes = static_cast<const char*>(panel);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * block;
    for (int64_t line = 0; line < block_bytes; line += 64)
      _mm_prefetch(panel_bytes + b * block_bytes + prefetch_bytes + line, _MM_HINT_T0);
    __m256i dot[ROWS][2];
    for (auto& d : dot) d[0] = d[1] = _mm256_setzero_si256();
    for (int64_t k = k0; k < k0 + block; k += 4) {
      const codes16 codes = codes4<F>(panel, k);
      __m256i magnitude_first = codes.first, magnitude_second = codes.second;
      if constexpr (F == weight_format::q8) {
        magnitude_first = _mm256_abs_epi8(codes.first);
        magnitude_second = _mm256_abs_epi8(codes.second);
      }
      for (int r = 0; r < ROWS; ++r) {
        int32_t four;
        std::memcpy(&four, x.codes + r * in + k, sizeof four);
        const __m256i xs = _mm256_set1_epi32(four);
        dot[r][0] = _mm256_add_epi32(dot[r][0], dot4<F>(codes.first, magnitude_first, xs));
        dot[r][1] = _mm256_add_epi32(dot[r][1], dot4<F>(codes.second, magnitude_second, xs));
      }
    }
    const int64_t at = (panel_index * groups + k0 / group) * width;
    const floats16 scale = F == weight_format::q4 ? regrouped_halves(w.half_scales.data() + at)
                                                  : regrouped(w.scales.data() + at);
    floats16 zero{_mm256_setzero_ps(), _mm256_setzero_ps()};
    if constexpr (F == weight_format::q4)
      zero = w.zeros.empty() ? floats16{common_zero, common_zero}
                             : regrouped_zeros(w.zeros.data() + at);
    for (int r = 0; r < ROWS; ++r) {
      const __m256 x_scale = _mm256_set1_ps(x.scales[r * blocks + b]);
      __m256 sum_first = _mm256_cvtepi32_ps(dot[r][0]);
      __m256 sum_second = _mm256_cvtepi32_ps(dot[r][1]);
      if constexpr (F == weight_format::q4) {
        const __m256 code_sum = _mm256_set1_ps(static_cast<float>(x.sums[r * blocks + b]));
        sum_first = _mm256_fnmadd_ps(zero.first, code_sum, sum_first);
        sum_second = _mm256_fnmadd_ps(zero.second, code_sum, sum_second);
      }
      total[r][0] = _mm256_fmadd_ps(sum_first, _mm256_mul_ps(scale.first, x_scale), total[r][0]);
      total[r][1] = _mm256_fmadd_ps(sum_second, _mm256_mul_ps(scale.second, x_scale), total[r][1]);
    }
  }
  for (int r = 0; r < ROWS; ++r) {
    alignas(32) float out[width];
    _mm256_store_ps(out, _mm256_permute2f128_ps(total[r][0], total[r][1], 0x20));
    _mm256_store_ps(out + 8, _mm256_permute2f128_ps(total[r][0], total[r][1], 0x31));
    // q4's scales are float16 of scale / scale_unit (1 for q8).
    for (int64_t c = 0; c < cols; ++c)
      y[r * ldy + c] = out[c] * w.scale_unit + (bias ? bias[c] : 0.0f);
  }
}

template <weight_format F>
void dot_panel_rows(const int8_activations& x, const packed_matrix& w, int64_t panel,
                    const float* bias, int64_t cols, float* y, int64_t ldy) {
  switch (x.rows) {
    case 1:
      return dot_panel<F, 1>(x, w, panel, bias, cols, y, ldy);
    case 2:
      return dot_panel<F, 2>(x, w, panel, bias, cols, y, ldy);
    case 3:
      return dot_panel<F, 3>(x, w, panel, bias, cols, y, ldy);
    default:
      return dot_panel<F, 4>(x, w, panel, bias, cols, y, ldy);
  }
}

}  // namespace

void integer_dot_panel_avx2(const int8_activations& x, const packed_matrix& w, int64_t panel,
                            const float* bias, int64_t cols, float* y, int64_t ldy) {
  if (w.format == weight_format::q8)
    dot_panel_rows<weight_format::q8>(x, w, panel, bias, cols, y, ldy);
  else
    dot_panel_rows<weight_format::q4>(x, w, panel, bias, cols, y, ldy);
}

}  // namespace actorllm::cpu::panels
