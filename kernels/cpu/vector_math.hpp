#pragma once
/// Vector math for the AVX2 kernels, inline so that each kernel keeps its values in registers.
/// Every function carries the target attribute: callers are compiled for AVX2 through their
/// own attribute and run only where the CPU has it (a runtime check decides).
#include <cpuid.h>
#include <immintrin.h>

#define ACTORLLM_AVX2 __attribute__((target("avx2,fma,f16c")))
/// The AVX-512 kernels' target: AVX2's and F, BW, VL, DQ (run where cpu_has_avx512()).
#define ACTORLLM_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")))

namespace actorllm::cpu {

/// Whether this CPU runs the ACTORLLM_AVX2 code: AVX2, FMA and F16C. F16C is read from CPUID
/// (leaf 1, ECX), since clang before 15 does not know the "f16c" name.
inline bool cpu_has_avx2() {
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  }();
  return yes;
}

/// Whether this CPU runs the ACTORLLM_AVX512 code: cpu_has_avx2() and AVX-512 F, BW, VL and
/// DQ (with the registers' state enabled by the OS, which the builtin checks).
inline bool cpu_has_avx512() {
  static const bool yes = cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes;
}

/// Whether this CPU runs the integer dot products: cpu_has_avx512() and AVX-512 VNNI and VBMI.
inline bool cpu_has_avx512_vnni() {
  static const bool yes = cpu_has_avx512() && __builtin_cpu_supports("avx512vnni") &&
                          __builtin_cpu_supports("avx512vbmi");
  return yes;
}

/// Whether this CPU runs the bf16 dot products: cpu_has_avx512_vnni() and AVX-512 BF16.
inline bool cpu_has_avx512_bf16() {
  static const bool yes = cpu_has_avx512_vnni() && __builtin_cpu_supports("avx512bf16");
  return yes;
}

/// Float8 E4M3FN codes, widened to 16 bits a lane, as float16 bits: each code's exponent and
/// mantissa bits moved into float16's places read a value 2^8 smaller (bias 15 against 7),
/// subnormals included, so that one multiply by 256 (or a scale that carries it) is exact.
/// The NaN code reads as a finite value: weights and caches never hold it.
ACTORLLM_AVX2 inline __m128i e4m3_as_f16_bits(__m128i codes) {
  const __m128i sign = _mm_slli_epi16(_mm_and_si128(codes, _mm_set1_epi16(0x80)), 8);
  const __m128i rest = _mm_slli_epi16(_mm_and_si128(codes, _mm_set1_epi16(0x7f)), 7);
  return _mm_or_si128(sign, rest);
}
ACTORLLM_AVX2 inline __m256i e4m3_as_f16_bits(__m256i codes) {
  const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x80)), 8);
  const __m256i rest = _mm256_slli_epi16(_mm256_and_si256(codes, _mm256_set1_epi16(0x7f)), 7);
  return _mm256_or_si256(sign, rest);
}

/// e^x for x <= 0 (shifted softmax scores) within 2 ulp of expf, and exactly 0 below -87 (so
/// a masked -inf score weighs nothing). Range reduction by ln 2 in two parts and a degree-6
/// polynomial on [-ln2/2, ln2/2], the constants of the Cephes library's expf.
ACTORLLM_AVX2 inline __m256 exp_nonpositive(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.0f);
  const __m256 underflow = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lowest);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // n is in [-126, 0] here, so 2^n is a normal float built from its exponent bits.
  const __m256i two_to_n =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(two_to_n)));
}

/// exp_nonpositive on sixteen lanes: the same reduction and polynomial, the same results.
ACTORLLM_AVX512 inline __m512 exp_nonpositive(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.0f);
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, lowest, _CMP_LT_OQ);
  x = _mm512_max_ps(x, lowest);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i two_to_n =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mul_ps(static_cast<__mmask16>(~underflow), p, _mm512_castsi512_ps(two_to_n));
}

/// silu(g) * up = g * sigmoid(g) * up, with sigmoid from e^-|g| so that the exp never
/// overflows: 1 / (1 + e) for g >= 0, e / (1 + e) below.
ACTORLLM_AVX2 inline __m256 silu_times(__m256 g, __m256 up) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 e = exp_nonpositive(_mm256_or_ps(g, sign_bit));  // e^-|g|
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 numerator = _mm256_blendv_ps(one, e, g);  // the sign bit of g picks e
  const __m256 sigmoid = _mm256_div_ps(numerator, _mm256_add_ps(one, e));
  return _mm256_mul_ps(_mm256_mul_ps(g, sigmoid), up);
}

}  // namespace actorllm::cpu
