// The packed GEMM's integer path on AVX-512 (the avx512_vnni set), four rows at a time: x
// quantized to int8 per block of 32 input features (int8_activations.cpp, as llama.cpp's Q8_0
// quantizes activations), then each panel's int8 or 4-bit codes meet it in AVX-512 VNNI dot
// products (vpdpbusd: four byte products summed into each 32-bit lane), four input features of
// 16 output features a step. Panels keep their layout (16 features per input feature); a byte
// permutation (VBMI) regroups four panel rows into the four features deep that vpdpbusd reads:
// one vpermb for int8, one two-source vpermt2b for 4-bit codes after their nibbles are split.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/packed_tiles.hpp"
#include "kernels/cpu/vector_math.hpp"

// GCC 12's AVX-512 conversion intrinsics pass an _mm512_undefined_* operand that its own
// analysis then calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define ACTORLLM_AVX512_VNNI                                                \
  __attribute__((                                                           \
      target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni," \
             "avx512vbmi")))

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t width = packed_matrix::panel_width;
constexpr int64_t block = int8_activations::block;
/// How far ahead of the block being read its codes are prefetched.
constexpr int64_t prefetch_bytes = 4096;

/// vpermb indices. q8: byte f * 4 + j takes byte j * 16 + f of four panel rows, feature f's
/// codes of the four input features in one 32-bit lane. Made once, not per panel.
/// q4 pairs (two-source vpermt2b over the low nibbles, then the high ones, of eight 8-byte
/// rows): byte f * 4 + j takes row j (q4_first) or row 4 + j (q4_second) of feature f, from
/// the low nibbles for features 0-7 and the high ones (source bytes 64 on) for 8-15.
struct regroup_tables {
  alignas(64) uint8_t q8[64];
  alignas(64) uint8_t q4_first[64];
  alignas(64) uint8_t q4_second[64];
  regroup_tables() {
    for (int f = 0; f < 16; ++f)
      for (int j = 0; j < 4; ++j) {
        q8[f * 4 + j] = static_cast<uint8_t>(j * 16 + f);
        const int source = (f < 8 ? 0 : 64) + j * 8 + f % 8;
        q4_first[f * 4 + j] = static_cast<uint8_t>(source);
        q4_second[f * 4 + j] = static_cast<uint8_t>(source + 32);
      }
  }
};
const regroup_tables regroup_indices;

/// Four panel rows of int8 codes from row k as 16 lanes of four codes.
ACTORLLM_AVX512_VNNI inline __m512i codes4_q8(const void* panel, int64_t k, __m512i regroup) {
  return _mm512_permutexvar_epi8(regroup,
                                 _mm512_loadu_si512(static_cast<const int8_t*>(panel) + k * width));
}

/// Eight rows of 4-bit codes from row k as two registers of 16 lanes of four codes, rows k
/// to k + 3 and k + 4 to k + 7: the nibbles split once for all eight rows, then one
/// two-source byte permutation per four rows (7 instructions for eight rows, against 12 for
/// two codes4<q4>).
ACTORLLM_AVX512_VNNI inline void codes8_q4(const void* panel, int64_t k, __m512i first_index,
                                           __m512i second_index, __m512i& first, __m512i& second) {
  const __m512i bytes = _mm512_loadu_si512(static_cast<const uint8_t*>(panel) + k * (width / 2));
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i low = _mm512_and_si512(bytes, nibble);
  const __m512i high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
  first = _mm512_permutex2var_epi8(low, first_index, high);
  second = _mm512_permutex2var_epi8(low, second_index, high);
}

/// y rows [0, ROWS) of one panel: sum over blocks b of x's scale_b * (the group's scale *
/// (dot_b - zero * x's code sum_b)), where dot_b is the integer dot product of the block.
template <weight_format F, int ROWS>
ACTORLLM_AVX512_VNNI void dot_panel(const int8_activations& x, const packed_matrix& w,
                                    int64_t panel_index, const float* bias, int64_t cols, float* y,
                                    int64_t ldy) {
  const int64_t in = w.in_features, groups = w.num_groups(), group = w.group_length();
  const void* panel =
      F == weight_format::q8
          ? static_cast<const void*>(w.panels8.data() + panel_index * in * width)
          : static_cast<const void*>(w.panels4.data() + panel_index * in * (width / 2));
  const __m512i regroup = _mm512_load_si512(regroup_indices.q8);
  const __m512i first_index = _mm512_load_si512(regroup_indices.q4_first);
  const __m512i second_index = _mm512_load_si512(regroup_indices.q4_second);
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(0x80));
  const int64_t blocks = in / block;
  // What comes off each block's dot products: q8 codes go in as code + 128; q4 codes minus
  // the common zero point, or (per_group_zeros) each group's.
  const bool per_group_zeros = F == weight_format::q4 && !w.zeros.empty();
  const int32_t offset_codes = F == weight_format::q8 ? 128 : w.common_zero;
  __m512 total[ROWS];
  for (auto& t : total) t = _mm512_setzero_ps();
  // A block's codes: 32 panel rows of 16 (q8) or 8 (q4) bytes.
  constexpr int64_t block_bytes = block * (F == weight_format::q8 ? width : width / 2);
  const auto* panel_bytes = static_cast<const char*>(panel);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * block;
    // The codes run 4 KB ahead of the hardware prefetcher (in this panel or, past its end,
    // the next, which the same member most often takes next; a prefetch never faults), into
    // L1. On an Intel Xeon with AVX-512 (2 cores), one stream of the 110M model: int4 6.1 ms
    // a step with the non-temporal hint this used to give 4-bit codes (it keeps the lines
    // out of L2, where that core's streamer works) and 2.4 - 3.3 ms with none, against 1.9 -
    // 2.0 ms; int8 4.8 - 5.5 ms with none, against 3.5 - 4.2 ms (about its read bound). On
    // the AMD EPYC of the earlier figures the non-temporal hint was about 10 % ahead for int4
    // and none about 15 % ahead for int8 (bench/README section 25).
    for (int64_t line = 0; line < block_bytes; line += 64)
      _mm_prefetch(panel_bytes + b * block_bytes + prefetch_bytes + line, _MM_HINT_T0);
    __m512i dot[ROWS];
    for (auto& d : dot) d = _mm512_setzero_si512();
    if constexpr (F == weight_format::q4) {
      // Eight rows a step (codes8_q4). One row: the two halves in two chains, so that
      // vpdpbusd's latency does not bound the stream (gemm_bench, 2 threads: about 1.08x).
      __m512i odd = _mm512_setzero_si512();
      for (int64_t k = k0; k < k0 + block; k += 8) {
        __m512i first, second;
        codes8_q4(panel, k, first_index, second_index, first, second);
        for (int r = 0; r < ROWS; ++r) {
          int32_t four, next;
          std::memcpy(&four, x.codes + r * in + k, sizeof four);
          std::memcpy(&next, x.codes + r * in + k + 4, sizeof next);
          dot[r] = _mm512_dpbusd_epi32(dot[r], first, _mm512_set1_epi32(four));
          if constexpr (ROWS == 1)
            odd = _mm512_dpbusd_epi32(odd, second, _mm512_set1_epi32(next));
          else
            dot[r] = _mm512_dpbusd_epi32(dot[r], second, _mm512_set1_epi32(next));
        }
      }
      if constexpr (ROWS == 1) dot[0] = _mm512_add_epi32(dot[0], odd);
    } else {
      // vpdpbusd multiplies unsigned by signed bytes: the weights go in as code + 128 (one
      // xor a step for every row), and 128 * the block's sum of x comes off below.
      if constexpr (ROWS == 1) {
        // Eight rows a step, the two halves in two chains, as q4's (gemm_bench int8 at one
        // row, interleaved with one chain: 226 - 236 against 174 - 199 GFLOP/s).
        __m512i odd = _mm512_setzero_si512();
        for (int64_t k = k0; k < k0 + block; k += 8) {
          int32_t four, next;
          std::memcpy(&four, x.codes + k, sizeof four);
          std::memcpy(&next, x.codes + k + 4, sizeof next);
          const __m512i first = _mm512_xor_si512(codes4_q8(panel, k, regroup), offset);
          const __m512i second = _mm512_xor_si512(codes4_q8(panel, k + 4, regroup), offset);
          dot[0] = _mm512_dpbusd_epi32(dot[0], first, _mm512_set1_epi32(four));
          odd = _mm512_dpbusd_epi32(odd, second, _mm512_set1_epi32(next));
        }
        dot[0] = _mm512_add_epi32(dot[0], odd);
      } else {
        for (int64_t k = k0; k < k0 + block; k += 4) {
          const __m512i codes = _mm512_xor_si512(codes4_q8(panel, k, regroup), offset);
          for (int r = 0; r < ROWS; ++r) {
            int32_t four;
            std::memcpy(&four, x.codes + r * in + k, sizeof four);
            dot[r] = _mm512_dpbusd_epi32(dot[r], codes, _mm512_set1_epi32(four));
          }
        }
      }
    }
    const int64_t at = (panel_index * groups + k0 / group) * width;
    const __m512 scale = F == weight_format::q4
                             ? _mm512_cvtph_ps(_mm256_loadu_si256(
                                   reinterpret_cast<const __m256i*>(w.half_scales.data() + at)))
                             : _mm512_loadu_ps(w.scales.data() + at);
    __m512 zero = _mm512_setzero_ps();
    if (per_group_zeros)
      zero = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.zeros.data() + at))));
    for (int r = 0; r < ROWS; ++r) {
      __m512 sum;
      if (per_group_zeros) {
        const float code_sum = static_cast<float>(x.sums[r * blocks + b]);
        sum = _mm512_fnmadd_ps(zero, _mm512_set1_ps(code_sum), _mm512_cvtepi32_ps(dot[r]));
      } else {
        // The integer sums take the common offset off exactly: int8's 128, or int4's zero.
        sum = _mm512_cvtepi32_ps(
            _mm512_sub_epi32(dot[r], _mm512_set1_epi32(offset_codes * x.sums[r * blocks + b])));
      }
      total[r] = _mm512_fmadd_ps(
          sum, _mm512_mul_ps(scale, _mm512_set1_ps(x.scales[r * blocks + b])), total[r]);
    }
  }
  const __mmask16 lanes =
      cols >= width ? __mmask16(0xffff) : static_cast<__mmask16>((1u << cols) - 1);
  const __m512 add = bias ? _mm512_maskz_loadu_ps(lanes, bias) : _mm512_setzero_ps();
  // q4's scales are float16 of scale / scale_unit (1 for q8).
  const __m512 unit = _mm512_set1_ps(w.scale_unit);
  for (int r = 0; r < ROWS; ++r)
    _mm512_mask_storeu_ps(y + r * ldy, lanes, _mm512_fmadd_ps(total[r], unit, add));
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

void integer_dot_panel_vnni(const int8_activations& x, const packed_matrix& w, int64_t panel,
                            const float* bias, int64_t cols, float* y, int64_t ldy) {
  if (w.format == weight_format::q8)
    dot_panel_rows<weight_format::q8>(x, w, panel, bias, cols, y, ldy);
  else
    dot_panel_rows<weight_format::q4>(x, w, panel, bias, cols, y, ldy);
}

}  // namespace actorllm::cpu::panels
