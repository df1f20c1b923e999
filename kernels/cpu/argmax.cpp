// The index of a row's largest value (greedy sampling over a vocabulary): the maximum in one
// pass, then the first position holding it, sixteen or eight values at a time where the CPU
// has AVX-512 (and kernel_isa_in_use() allows it) or AVX2. NaN is never the maximum: MAXPS keeps
// its second operand, the running maximum, when the first is NaN, as x > m ? x : m does one value
// at a time.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/kernel_isa.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vector_math.hpp"

// GCC 12's AVX-512 intrinsics pass an _mm512_undefined_* operand that its own analysis then
// calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace actorllm::cpu {

namespace {

int64_t first_index_of(const float* x, int64_t from, int64_t n, float best) {
  for (int64_t i = from; i < n; ++i)
    if (x[i] == best) return i;
  return -1;
}

ACTORLLM_AVX512 int64_t argmax_avx512(const float* x, int64_t n) {
  const int64_t whole = n / 16 * 16;
  __m512 lanes = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < whole; i += 16) lanes = _mm512_max_ps(_mm512_loadu_ps(x + i), lanes);
  float best = _mm512_reduce_max_ps(lanes);
  for (int64_t i = whole; i < n; ++i) best = x[i] > best ? x[i] : best;
  const __m512 wanted = _mm512_set1_ps(best);
  for (int64_t i = 0; i < whole; i += 16)
    if (const __mmask16 hit = _mm512_cmpeq_ps_mask(_mm512_loadu_ps(x + i), wanted))
      return i + __builtin_ctz(hit);
  return first_index_of(x, whole, n, best);
}

ACTORLLM_AVX2 int64_t argmax_avx2(const float* x, int64_t n) {
  const int64_t whole = n / 8 * 8;
  __m256 lanes = _mm256_set1_ps(-INFINITY);
  for (int64_t i = 0; i < whole; i += 8) lanes = _mm256_max_ps(_mm256_loadu_ps(x + i), lanes);
  alignas(32) float each[8];
  _mm256_store_ps(each, lanes);
  float best = -INFINITY;
  for (float v : each) best = v > best ? v : best;
  for (int64_t i = whole; i < n; ++i) best = x[i] > best ? x[i] : best;
  const __m256 wanted = _mm256_set1_ps(best);
  for (int64_t i = 0; i < whole; i += 8)
    if (const int hit =
            _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), wanted, _CMP_EQ_OQ)))
      return i + __builtin_ctz(static_cast<unsigned>(hit));
  return first_index_of(x, whole, n, best);
}

}  // namespace

int64_t argmax(const float* x, int64_t n) {
  int64_t at = -1;
  if (uses_avx512(kernel_isa_in_use()) && cpu_has_avx512()) {
    at = argmax_avx512(x, n);
  } else if (cpu_has_avx2()) {
    at = argmax_avx2(x, n);
  } else {
    float best = -INFINITY;
    for (int64_t i = 0; i < n; ++i) best = x[i] > best ? x[i] : best;
    at = first_index_of(x, 0, n, best);
  }
  return at < 0 ? 0 : at;  // every value NaN (or none): the first index, as before
}

}  // namespace actorllm::cpu
