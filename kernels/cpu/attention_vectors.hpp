#pragma once
// The attention kernels' helpers (attention_avx2.cpp, attention_avx512.cpp and the prefill
// tiles' attention_tile_avx2.cpp and attention_tile_avx512.cpp): cache rows widened to float32,
// eight or sixteen values at a time, and horizontal sums and maxima.
#include <immintrin.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::detail {

ACTORLLM_AVX2 inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}

ACTORLLM_AVX2 inline __m256 load8(const half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

/// Eight float8 E4M3 codes through float16, exact (e4m3_as_f16_bits). Writes saturate, so the
/// NaN code never reaches a cache.
ACTORLLM_AVX2 inline __m256 load8(const float8_e4m3* p) {
  const __m128i codes = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_mul_ps(_mm256_cvtph_ps(e4m3_as_f16_bits(codes)), _mm256_set1_ps(256.0f));
}

/// Asks for `bytes` from p into L1, one request per 64 bytes (p's rows in a block start on a
/// line where a row is a multiple of 64 bytes; otherwise the last line may go unasked).
ACTORLLM_AVX2 inline void prefetch_rows(const void* p, int64_t bytes) {
  for (int64_t at = 0; at < bytes; at += 64)
    _mm_prefetch(static_cast<const char*>(p) + at, _MM_HINT_T0);
}

/// Lane j of the result is the sum of the lanes of v[j].
ACTORLLM_AVX2 inline __m256 sum_each(const __m256 v[8]) {
  const __m256 pairs01 = _mm256_hadd_ps(v[0], v[1]);
  const __m256 pairs23 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 pairs45 = _mm256_hadd_ps(v[4], v[5]);
  const __m256 pairs67 = _mm256_hadd_ps(v[6], v[7]);
  // Per 128-bit half: the sums of v0..v3 (and of v4..v7) over that half's four lanes.
  const __m256 quads0123 = _mm256_hadd_ps(pairs01, pairs23);
  const __m256 quads4567 = _mm256_hadd_ps(pairs45, pairs67);
  return _mm256_add_ps(_mm256_permute2f128_ps(quads0123, quads4567, 0x20),
                       _mm256_permute2f128_ps(quads0123, quads4567, 0x31));
}

ACTORLLM_AVX2 inline float max_of(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

ACTORLLM_AVX2 inline float sum_of(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

ACTORLLM_AVX512 inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}

ACTORLLM_AVX512 inline __m512 load16(const half* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

/// Sixteen float8 E4M3 codes through float16, exact, as load8 reads eight.
ACTORLLM_AVX512 inline __m512 load16(const float8_e4m3* p) {
  const __m256i codes = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm512_mul_ps(_mm512_cvtph_ps(e4m3_as_f16_bits(codes)), _mm512_set1_ps(256.0f));
}

/// Lanes i and i + 8 added.
ACTORLLM_AVX512 inline __m256 fold(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}

}  // namespace actorllm::cpu::detail
