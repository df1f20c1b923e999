#pragma once
// The packed GEMM's loaders (packed_linear.cpp only): how each panel format's 16 weights of
// one input feature become two registers of float32.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/packed_linear.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::panels {

constexpr int64_t width = packed_matrix::panel_width;

/// The 16 weights of one input feature k in a panel, widened to float32 in two registers.
/// f16 and bf16 widen exactly; q8 and q4 give the integers (q4: code - zero), the scale
/// applied after the sum. A loader is made per tile, for one group of input features (its
/// zero points: q4's; the others keep no state). k_stride: elements per input feature.
template <weight_format F>
struct panel_loader;

struct stateless_loader {
  static constexpr int64_t k_stride = width;
  explicit stateless_loader(const uint8_t* /*zeros*/) {}
};

template <>
struct panel_loader<weight_format::f32> : stateless_loader {
  using stateless_loader::stateless_loader;
  using element = float;
  ACTORLLM_AVX2 static void load(const float* p, __m256& w0, __m256& w1) {
    w0 = _mm256_loadu_ps(p);
    w1 = _mm256_loadu_ps(p + 8);
  }
};

template <>
struct panel_loader<weight_format::f16> : stateless_loader {
  using stateless_loader::stateless_loader;
  using element = uint16_t;
  ACTORLLM_AVX2 static void load(const uint16_t* p, __m256& w0, __m256& w1) {
    w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
};

template <>
struct panel_loader<weight_format::bf16> : stateless_loader {
  using stateless_loader::stateless_loader;
  using element = uint16_t;
  ACTORLLM_AVX2 static void load(const uint16_t* p, __m256& w0, __m256& w1) {
    const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i hi =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
    w0 = _mm256_castsi256_ps(_mm256_slli_epi32(lo, 16));
    w1 = _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16));
  }
};

template <>
struct panel_loader<weight_format::q8> : stateless_loader {
  using stateless_loader::stateless_loader;
  using element = int8_t;
  ACTORLLM_AVX2 static void load(const int8_t* p, __m256& w0, __m256& w1) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(q, q)));
  }
};

template <>
struct panel_loader<weight_format::fp8> : stateless_loader {
  using stateless_loader::stateless_loader;
  using element = int8_t;
  /// E4M3FN codes through float16 (packed_matrix::scales says why the value is 2^8 smaller).
  ACTORLLM_AVX2 static void load(const int8_t* p, __m256& w0, __m256& w1) {
    const __m256i codes =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x80)), 8);
    const __m256i rest = _mm256_slli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x7f)), 7);
    const __m256i halves = _mm256_or_si256(sign, rest);
    w0 = _mm256_cvtph_ps(_mm256_castsi256_si128(halves));
    w1 = _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1));
  }
};

template <>
struct panel_loader<weight_format::q4> {
  using element = uint8_t;
  static constexpr int64_t k_stride = width / 2;
  /// The group's zero points of features 0-7 and of 8-15, each in both halves of a register.
  __m128i zero_lo, zero_hi;
  ACTORLLM_AVX2 explicit panel_loader(const uint8_t* zeros)
      : zero_lo(both_halves(zeros)), zero_hi(both_halves(zeros + 8)) {}
  ACTORLLM_AVX2 static __m128i both_halves(const uint8_t* eight) {
    int64_t v;
    std::memcpy(&v, eight, 8);
    return _mm_set1_epi64x(v);
  }
  /// The codes minus the zero points of the 8-byte rows in `bytes` (one, or two: k and
  /// k + 1), as signed bytes: features 0-7 of each row in lo, 8-15 in hi. A row's low
  /// nibbles are features 0-7, its high ones 8-15 (packed_matrix).
  ACTORLLM_AVX2 void codes(__m128i bytes, __m128i& lo, __m128i& hi) const {
    const __m128i nibble = _mm_set1_epi8(0x0f);
    lo = _mm_sub_epi8(_mm_and_si128(bytes, nibble), zero_lo);
    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), nibble), zero_hi);
  }
  ACTORLLM_AVX2 void load(const uint8_t* p, __m256& w0, __m256& w1) const {
    __m128i lo, hi;
    codes(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), lo, hi);
    w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
  }
  /// Input features k and k + 1 from one 16-byte load: the masks and subtractions once.
  ACTORLLM_AVX2 void load2(const uint8_t* p, __m256& w0, __m256& w1, __m256& v0, __m256& v1) const {
    __m128i lo, hi;
    codes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), lo, hi);
    w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    v0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    v1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
  }
};

/// Formats whose blocks' sums are multiplied by per-feature scales.
template <weight_format F>
constexpr bool is_scaled =
    F == weight_format::q8 || F == weight_format::fp8 || F == weight_format::q4;

}  // namespace actorllm::cpu::panels
