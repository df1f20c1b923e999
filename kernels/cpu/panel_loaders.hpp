#pragma once
// The packed GEMM's loaders (packed_linear.cpp only): how each panel format's 16 weights of
// one input feature become two registers of float32.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/packed_linear.hpp"
#include "kernels/cpu/packed_tiles.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::panels {

constexpr int64_t width = packed_matrix::panel_width;

/// The 16 weights of one input feature k in a panel, widened to float32 in two registers.
/// f16 and bf16 widen exactly; q8, fp8 and q4 give the codes, the scale (and q4's zero
/// point) applied to each group's sum (group_factors). k_stride: elements per input feature.
template <weight_format F>
struct panel_loader;

struct full_width_rows {
  static constexpr int64_t k_stride = width;
};

template <>
struct panel_loader<weight_format::f32> : full_width_rows {
  using element = float;
  ACTORLLM_AVX2 static void load(const float* p, __m256& w0, __m256& w1) {
    w0 = _mm256_loadu_ps(p);
    w1 = _mm256_loadu_ps(p + 8);
  }
};

template <>
struct panel_loader<weight_format::f16> : full_width_rows {
  using element = uint16_t;
  ACTORLLM_AVX2 static void load(const uint16_t* p, __m256& w0, __m256& w1) {
    w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
};

/// bf16 panels hold input features in pairs (packed_matrix::panels16): panel row k is the
/// low (k even) or high (k odd) half of each lane of pair row k / 2, moved to a float32's top.
template <>
struct panel_loader<weight_format::bf16> : full_width_rows {  // k_stride: on average
  using element = uint16_t;
  ACTORLLM_AVX2 static void row(const uint16_t* panel, int64_t k, __m256& w0, __m256& w1) {
    const uint16_t* pair = panel + (k & ~int64_t(1)) * width;
    const __m128i shift = _mm_cvtsi32_si128(16 - 16 * int(k & 1));
    const __m256i top = _mm256_set1_epi32(int(0xffff0000u));
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + 16));
    w0 = _mm256_castsi256_ps(_mm256_and_si256(_mm256_sll_epi32(lo, shift), top));
    w1 = _mm256_castsi256_ps(_mm256_and_si256(_mm256_sll_epi32(hi, shift), top));
  }
};

template <>
struct panel_loader<weight_format::q8> : full_width_rows {
  using element = int8_t;
  ACTORLLM_AVX2 static void load(const int8_t* p, __m256& w0, __m256& w1) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q, q)));
  }
};

template <>
struct panel_loader<weight_format::fp8> : full_width_rows {
  using element = int8_t;
  /// E4M3FN codes through float16 (packed_matrix::scales says why the value is 2^8 smaller).
  ACTORLLM_AVX2 static void load(const int8_t* p, __m256& w0, __m256& w1) {
    const __m256i halves = e4m3_as_f16_bits(
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    w0 = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    w1 = _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1));
  }
};

template <>
struct panel_loader<weight_format::q4> {
  using element = uint8_t;
  static constexpr int64_t k_stride = width / 2;
  /// Eight bytes, one input feature's: the low nibbles are features 0-7, the high ones 8-15
  /// (packed_matrix). w0 = the codes of features 0-7; w1 = 16 times the codes of 8-15 (masked
  /// in place, not shifted down: group_factors divides their scales by 16). Zero points are
  /// the caller's: the tile subtracts zero * sum of x per group, the widener each weight's.
  ACTORLLM_AVX2 static void load(const uint8_t* p, __m256& w0, __m256& w1) {
    const __m256i bytes =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    w0 = _mm256_cvtepi32_ps(_mm256_and_si256(bytes, _mm256_set1_epi32(0x0f)));
    w1 = _mm256_cvtepi32_ps(_mm256_and_si256(bytes, _mm256_set1_epi32(0xf0)));
  }
};

/// Panel row k of `panel` in two registers: row() where the format pairs its rows.
template <weight_format F>
ACTORLLM_AVX2 __attribute__((always_inline)) inline void panel_row(
    const typename panel_loader<F>::element* panel, int64_t k, __m256& w0, __m256& w1) {
  if constexpr (F == weight_format::bf16)
    panel_loader<F>::row(panel, k, w0, w1);
  else
    panel_loader<F>::load(panel + k * panel_loader<F>::k_stride, w0, w1);
}

/// What turns a group's sums of loaded weights into y: sum * scale - zero * scale * (the sum of
/// x over the group), per feature (0-7 in the first register of each pair, 8-15 in the
/// second). q8 and fp8: their scales and no zero; q4: its scales (8-15's over 16, as loaded)
/// and its zero points in the loaded units (8-15's times 16). A weight is (loaded - zero) *
/// scale, exactly (the 16s are powers of two).
struct group_factors {
  __m256 scale0, scale1, zero0, zero1;
};

/// Eight bytes as eight floats.
ACTORLLM_AVX2 inline __m256 widen_bytes(const uint8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

/// Group g's factors (block_groups).
template <weight_format F>
ACTORLLM_AVX2 inline group_factors factors_of(const block_groups& groups, int64_t g) {
  constexpr int64_t width = packed_matrix::panel_width;
  if constexpr (F == weight_format::q4) {
    const uint16_t* half = groups.half_scale + g * width;
    const __m256 unit = _mm256_set1_ps(groups.scale_unit);
    const __m256 sixteen = _mm256_set1_ps(16.0f);
    group_factors f;
    f.scale0 = _mm256_mul_ps(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(half))), unit);
    f.scale1 = _mm256_div_ps(
        _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(half + 8))),
                      unit),
        sixteen);
    const uint8_t* zeros = groups.zeros ? groups.zeros + g * width : nullptr;
    const __m256 common = _mm256_set1_ps(static_cast<float>(groups.common_zero));
    f.zero0 = zeros ? widen_bytes(zeros) : common;
    f.zero1 = _mm256_mul_ps(zeros ? widen_bytes(zeros + 8) : common, sixteen);
    return f;
  } else {
    const float* scale = groups.scale + g * width;
    return {_mm256_loadu_ps(scale), _mm256_loadu_ps(scale + 8), _mm256_setzero_ps(),
            _mm256_setzero_ps()};
  }
}

/// Formats whose blocks' sums are multiplied by per-feature scales.
template <weight_format F>
constexpr bool is_scaled =
    F == weight_format::q8 || F == weight_format::fp8 || F == weight_format::q4;

}  // namespace actorllm::cpu::panels
