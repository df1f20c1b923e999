// The packed GEMM's AVX-512 tiles: a register tile of up to 16 rows by one 16-feature panel,
// one 16-float accumulator a row (AVX2 needs two), so a row costs one FMA per input feature
// and a panel's weights widen in one or two instructions. Same products and the same group
// folding as the AVX2 tiles (packed_tiles_avx2.cpp); partial panels use masked loads and
// stores instead of a bounce buffer.
#include <immintrin.h>

// GCC 12's AVX-512 conversion intrinsics pass an _mm512_undefined_* operand that its own
// analysis then calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <cstring>

#include "kernels/cpu/packed_tiles.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t width = packed_matrix::panel_width;
constexpr int64_t tile_rows = 16;

/// The 16 weights of one input feature in a panel, as one register of float32: exactly for
/// f32, f16 and bf16; the codes for q8, fp8 (2^8 small) and q4 (features 8-15 16 times
/// large), as the AVX2 loaders give them (panel_loaders.hpp), their factors applied per group.
template <weight_format F>
struct loader512;

template <>
struct loader512<weight_format::f32> {
  using element = float;
  static constexpr int64_t k_stride = width;
  ACTORLLM_AVX512 static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
};

template <>
struct loader512<weight_format::f16> {
  using element = uint16_t;
  static constexpr int64_t k_stride = width;
  ACTORLLM_AVX512 static __m512 load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};

/// bf16 panels hold input features in pairs (packed_matrix::panels16): panel row k is the
/// low (k even) or high (k odd) half of each lane of pair row k / 2, moved to a float32's top.
template <>
struct loader512<weight_format::bf16> {
  using element = uint16_t;
  static constexpr int64_t k_stride = width;  // on average: a pair row is two panel rows
  ACTORLLM_AVX512 static __m512 row(const uint16_t* panel, int64_t k) {
    const __m512i pair = _mm512_loadu_si512(panel + (k & ~int64_t(1)) * width);
    const __m512i top = _mm512_sll_epi32(pair, _mm_cvtsi32_si128(16 - 16 * int(k & 1)));
    return _mm512_castsi512_ps(_mm512_and_si512(top, _mm512_set1_epi32(int(0xffff0000u))));
  }
};

template <>
struct loader512<weight_format::q8> {
  using element = int8_t;
  static constexpr int64_t k_stride = width;
  ACTORLLM_AVX512 static __m512 load(const int8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

template <>
struct loader512<weight_format::fp8> {
  using element = int8_t;
  static constexpr int64_t k_stride = width;
  ACTORLLM_AVX512 static __m512 load(const int8_t* p) {
    return _mm512_cvtph_ps(e4m3_as_f16_bits(
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))));
  }
};

template <>
struct loader512<weight_format::q4> {
  using element = uint8_t;
  static constexpr int64_t k_stride = width / 2;
  /// The eight bytes twice: lanes 0-7 keep the low nibbles (features 0-7), lanes 8-15 the
  /// high ones in place (features 8-15, 16 times their codes).
  ACTORLLM_AVX512 static __m512 load(const uint8_t* p) {
    long long bits;
    std::memcpy(&bits, p, sizeof bits);
    const __m512i bytes = _mm512_cvtepu8_epi32(_mm_set1_epi64x(bits));
    const __m512i nibbles = _mm512_set_epi32(0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x0f,
                                             0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f);
    return _mm512_cvtepi32_ps(_mm512_and_si512(bytes, nibbles));
  }
};

/// Panel row k of `panel` as float32 (or codes): row() where the format pairs its rows.
template <weight_format F>
ACTORLLM_AVX512 __attribute__((always_inline)) inline __m512 panel_row(
    const typename loader512<F>::element* panel, int64_t k) {
  if constexpr (F == weight_format::bf16)
    return loader512<F>::row(panel, k);
  else
    return loader512<F>::load(panel + k * loader512<F>::k_stride);
}

/// A group's factors, as panel_loaders.hpp's group_factors in one register each: q8 and fp8
/// their scales; q4 its scales (8-15's over 16) and zero points (8-15's times 16).
struct factors512 {
  __m512 scale, zero;
};

/// Group g's factors (block_groups).
template <weight_format F>
ACTORLLM_AVX512 inline factors512 factors_of(const block_groups& groups, int64_t g) {
  if constexpr (F == weight_format::q4) {
    const float s = 1.0f / 16.0f;
    const __m256i half =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(groups.half_scale + g * width));
    factors512 f;
    f.scale = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtph_ps(half), _mm512_set1_ps(groups.scale_unit)),
                            _mm512_set_ps(s, s, s, s, s, s, s, s, 1, 1, 1, 1, 1, 1, 1, 1));
    const __m512 codes = groups.zeros
                             ? _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(
                                   reinterpret_cast<const __m128i*>(groups.zeros + g * width))))
                             : _mm512_set1_ps(static_cast<float>(groups.common_zero));
    f.zero =
        _mm512_mul_ps(codes, _mm512_set_ps(16, 16, 16, 16, 16, 16, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1));
    return f;
  } else {
    return {_mm512_loadu_ps(groups.scale + g * width), _mm512_setzero_ps()};
  }
}

template <weight_format F>
constexpr bool is_scaled =
    F == weight_format::q8 || F == weight_format::fp8 || F == weight_format::q4;

/// M(r) for every row r of a tile.
#define ACTORLLM_EACH_ROW16(M) \
  M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define ACTORLLM_ACCUMULATOR_PARAMS                                                               \
  __m512 &a0, __m512 &a1, __m512 &a2, __m512 &a3, __m512 &a4, __m512 &a5, __m512 &a6, __m512 &a7, \
      __m512 &a8, __m512 &a9, __m512 &a10, __m512 &a11, __m512 &a12, __m512 &a13, __m512 &a14,    \
      __m512 &a15
#define ACTORLLM_ACCUMULATORS a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15

/// Asks for the line at panel[at] into L1. A function, not a lambda: GCC 12 dropped every
/// prefetch of a lambda inlined into accumulate's one-row loop (one bf16 stream of the 110M
/// model, a chain of GEMMs from DRAM: 12.3 → 10.1 ms once they came back).
template <typename Element>
ACTORLLM_AVX512 __attribute__((always_inline)) inline void prefetch_line(const Element* panel,
                                                                         int64_t at) {
  _mm_prefetch(reinterpret_cast<const char*>(panel + at), _MM_HINT_T0);
}

/// Adds x rows [0, ROWS) (k-major: tile_fn) times panel rows [k0, k1) to the accumulators
/// a<r>; one row spreads over a0-a3, four chains of alternate input features, so that the
/// FMA's latency does not bound a single stream. Inlined into the tile, so that the
/// accumulators stay in registers. Several rows: accumulate_rows.
template <weight_format F, int ROWS>
ACTORLLM_AVX512 __attribute__((always_inline)) inline void accumulate(
    const float* x, const typename loader512<F>::element* panel, const next_block_share& next,
    int64_t k0, int64_t k1, ACTORLLM_ACCUMULATOR_PARAMS);

/// Several rows: one panel row a step, FMA'd into each row's accumulator. With NEXT the step
/// also asks for its share of the next depth block (next_block_share): the first row tile of
/// a block would otherwise wait on DRAM while the others find the block in L1 (float32, 32
/// rows: about 1.2x). A template flag, not a test in the loop: the 16-row loop has few
/// registers to spare.
template <weight_format F, int ROWS, bool NEXT>
ACTORLLM_AVX512 __attribute__((always_inline)) inline void accumulate_rows(
    const float* x, const typename loader512<F>::element* panel, const next_block_share& next,
    int64_t k0, int64_t k1, ACTORLLM_ACCUMULATOR_PARAMS) {
  using loader = loader512<F>;
  constexpr int64_t stride = loader::k_stride;
  constexpr int64_t prefetch_k = 1024 / (stride * sizeof(typename loader::element));
#pragma GCC unroll 4
  for (int64_t k = k0; k < k1; ++k) {
    _mm_prefetch(reinterpret_cast<const char*>(panel + (k + prefetch_k) * stride), _MM_HINT_T0);
    if constexpr (NEXT)
      _mm_prefetch(reinterpret_cast<const char*>(panel + (block_depth + next.row(k)) * stride),
                   _MM_HINT_T1);
    const __m512 w = panel_row<F>(panel, k);
#define ACTORLLM_FMA_ROW(r) \
  if constexpr (ROWS > r) a##r = _mm512_fmadd_ps(_mm512_set1_ps(x[k * ROWS + r]), w, a##r);
    ACTORLLM_EACH_ROW16(ACTORLLM_FMA_ROW)
#undef ACTORLLM_FMA_ROW
  }
}

template <weight_format F, int ROWS>
ACTORLLM_AVX512 __attribute__((always_inline)) inline void accumulate(
    const float* x, const typename loader512<F>::element* panel, const next_block_share& next,
    int64_t k0, int64_t k1, ACTORLLM_ACCUMULATOR_PARAMS) {
  using loader = loader512<F>;
  constexpr int64_t stride = loader::k_stride;
  constexpr int64_t row_bytes = stride * sizeof(typename loader::element);
  // One row is a pure stream: it asks 4 KB ahead (several rows: accumulate_rows, 1 KB).
  constexpr int64_t prefetch_k = 4096 / row_bytes;
  if constexpr (ROWS == 1) {
    int64_t k = k0;
    for (; k + 3 < k1; k += 4) {
      // Four panel rows take row_bytes * 4 bytes: one prefetch per cache line of them.
      prefetch_line(panel, (k + prefetch_k) * stride);
      if constexpr (row_bytes * 4 > 64)
        prefetch_line(panel, (k + 64 / row_bytes + prefetch_k) * stride);
      if constexpr (row_bytes * 4 > 128) {
        prefetch_line(panel, (k + 2 + prefetch_k) * stride);
        prefetch_line(panel, (k + 3 + prefetch_k) * stride);
      }
      a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[k]), panel_row<F>(panel, k), a0);
      a1 = _mm512_fmadd_ps(_mm512_set1_ps(x[k + 1]), panel_row<F>(panel, k + 1), a1);
      a2 = _mm512_fmadd_ps(_mm512_set1_ps(x[k + 2]), panel_row<F>(panel, k + 2), a2);
      a3 = _mm512_fmadd_ps(_mm512_set1_ps(x[k + 3]), panel_row<F>(panel, k + 3), a3);
    }
    for (; k < k1; ++k) a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[k]), panel_row<F>(panel, k), a0);
  } else if (next.on) {
    accumulate_rows<F, ROWS, true>(x, panel, next, k0, k1, ACTORLLM_ACCUMULATORS);
  } else {
    accumulate_rows<F, ROWS, false>(x, panel, next, k0, k1, ACTORLLM_ACCUMULATORS);
  }
}

/// The tile_fn of ROWS rows (packed_tiles.hpp).
template <weight_format F, int ROWS>
ACTORLLM_AVX512 void tile(const float* x, int64_t depth, const void* panel_bytes,
                          const block_groups& groups, const float* bias, int64_t cols,
                          bool accumulate_y, float* y, int64_t ldy) {
  using loader = loader512<F>;
  const auto* panel = static_cast<const typename loader::element*>(panel_bytes);
  const __mmask16 lanes =
      cols >= width ? __mmask16(0xffff) : static_cast<__mmask16>((1u << cols) - 1);
  // Named accumulators, not an array: GCC keeps an array of vectors on the stack.
  __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;
  a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = a12 = a13 = a14 = a15 =
      _mm512_setzero_ps();
  if (accumulate_y) {
#define ACTORLLM_LOAD_ROW(r) \
  if constexpr (ROWS > r) a##r = _mm512_maskz_loadu_ps(lanes, y + r * ldy);
    ACTORLLM_EACH_ROW16(ACTORLLM_LOAD_ROW)
#undef ACTORLLM_LOAD_ROW
  }
  if constexpr (!is_scaled<F>) {
    accumulate<F, ROWS>(x, panel, groups.next_block, 0, depth, ACTORLLM_ACCUMULATORS);
    if constexpr (ROWS == 1) a0 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
  } else {
    // What y holds (or 0) plus each group's scaled sum, kept here while the accumulators
    // start from zero for every group.
    alignas(64) float total[ROWS * width];
#define ACTORLLM_SAVE_ROW(r) \
  if constexpr (ROWS > r) _mm512_store_ps(total + r * width, a##r);
    ACTORLLM_EACH_ROW16(ACTORLLM_SAVE_ROW)
#undef ACTORLLM_SAVE_ROW
    const int64_t group = groups.group;
    for (int64_t g0 = 0; g0 < depth; g0 += group) {
      const int64_t g = g0 / group;
      a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = a12 = a13 = a14 = a15 =
          _mm512_setzero_ps();
      accumulate<F, ROWS>(x, panel, groups.next_block, g0, std::min(depth, g0 + group),
                          ACTORLLM_ACCUMULATORS);
      if constexpr (ROWS == 1) a0 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
      const factors512 f = factors_of<F>(groups, g);
      // q4: minus zero * scale * (the group's sum of x), the zero points' share of the sum.
      const __m512 zero_scale = _mm512_mul_ps(f.zero, f.scale);
#define ACTORLLM_FOLD_ROW(r)                                                                      \
  if constexpr (ROWS > r) {                                                                       \
    __m512 t = _mm512_fmadd_ps(a##r, f.scale, _mm512_load_ps(total + r * width));                 \
    if constexpr (F == weight_format::q4)                                                         \
      t = _mm512_fnmadd_ps(zero_scale, _mm512_set1_ps(groups.x_sums[r * groups.ld_sums + g]), t); \
    _mm512_store_ps(total + r * width, t);                                                        \
  }
      ACTORLLM_EACH_ROW16(ACTORLLM_FOLD_ROW)
#undef ACTORLLM_FOLD_ROW
    }
#define ACTORLLM_TOTAL_ROW(r) \
  if constexpr (ROWS > r) a##r = _mm512_load_ps(total + r * width);
    ACTORLLM_EACH_ROW16(ACTORLLM_TOTAL_ROW)
#undef ACTORLLM_TOTAL_ROW
  }
  const __m512 b = bias ? _mm512_maskz_loadu_ps(lanes, bias) : _mm512_setzero_ps();
#define ACTORLLM_STORE_ROW(r) \
  if constexpr (ROWS > r) _mm512_mask_storeu_ps(y + r * ldy, lanes, _mm512_add_ps(a##r, b));
  ACTORLLM_EACH_ROW16(ACTORLLM_STORE_ROW)
#undef ACTORLLM_STORE_ROW
}

/// The widen_fn of a format (packed_tiles.hpp): (loaded - zero) * scale per weight, the same
/// float32 values as the AVX2 widener's.
template <weight_format F>
ACTORLLM_AVX512 void widen_block(const void* panel_bytes, const block_groups& groups, int64_t depth,
                                 float* dst) {
  using loader = loader512<F>;
  constexpr int64_t stride = loader::k_stride;
  constexpr int64_t row_bytes = stride * sizeof(typename loader::element);
  const auto* panel = static_cast<const typename loader::element*>(panel_bytes);
  const int64_t group = groups.group;
  for (int64_t g0 = 0; g0 < depth; g0 += group) {
    const int64_t g = g0 / group;
    factors512 f{};
    if constexpr (is_scaled<F>) f = factors_of<F>(groups, g);
    for (int64_t k = g0; k < std::min(depth, g0 + group); ++k) {
      // The next block toward L2 while the row tiles run over this one's copy (as the float32
      // tiles' next_block), one prefetch per cache line.
      if (groups.next_block.on && (k * row_bytes) % 64 == 0)
        _mm_prefetch(reinterpret_cast<const char*>(panel + (k + block_depth) * stride),
                     _MM_HINT_T1);
      __m512 w = panel_row<F>(panel, k);
      if constexpr (is_scaled<F>) w = _mm512_mul_ps(_mm512_sub_ps(w, f.zero), f.scale);
      _mm512_store_ps(dst + k * width, w);
    }
  }
}

template <weight_format F>
constexpr tile_fn tiles_of[tile_rows + 1] = {
    nullptr,     tile<F, 1>,  tile<F, 2>,  tile<F, 3>,  tile<F, 4>,  tile<F, 5>,
    tile<F, 6>,  tile<F, 7>,  tile<F, 8>,  tile<F, 9>,  tile<F, 10>, tile<F, 11>,
    tile<F, 12>, tile<F, 13>, tile<F, 14>, tile<F, 15>, tile<F, 16>};

struct avx512_set {
  static constexpr int64_t max_rows = tile_rows;
  template <weight_format F>
  static constexpr const tile_fn* tiles = tiles_of<F>;
  template <weight_format F>
  static constexpr widen_fn widen = widen_block<F>;
};

}  // namespace

tile_kernels avx512_tiles(weight_format format) {
  tile_kernels kernels = kernels_of<avx512_set>(format);
  if (format == weight_format::f32) add_avx512_wide_tiles(kernels);
  return kernels;
}

}  // namespace actorllm::cpu::panels
