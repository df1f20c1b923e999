// The packed GEMM's bf16 dot-product tiles (the avx512_bf16 set): bf16 weights meet x rounded
// to bf16 in vdpbf16ps, which multiplies two bf16 pairs per 32-bit lane and adds both
// products to a float32 accumulator: 32 multiply-adds an instruction where the float32 tiles'
// FMA does 16 after widening the weights. For batches of more than one row, where the
// multiply-adds weigh (one row streams the weights and stays on the float32 tiles).
//
// bf16 panels are packed in pairs (rows k and k + 1 of each feature side by side, the operand
// layout of vdpbf16ps; packed_matrix::panels16), so every row tile reads the panel as it is;
// x is rounded to bf16 once per GEMM (bf16_activations), round to nearest even as
// vcvtne2ps2bf16 does.
#include <immintrin.h>

// GCC 12's AVX-512 conversion intrinsics pass an _mm512_undefined_* operand that its own
// analysis then calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <cstring>

#include "kernels/cpu/packed_tiles.hpp"

#define ACTORLLM_AVX512_BF16 \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t width = packed_matrix::panel_width;
constexpr int64_t tile_rows = 12;

/// M(r) for every row r of a tile.
#define ACTORLLM_EACH_BF16_ROW(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11)

/// Adds x pair rows [0, ROWS) times pair rows [0, pairs) of w to the accumulators: one pair
/// row a step, asked for 1 KB ahead. With NEXT the step also asks for the tile's share of the
/// next depth block into L2 (next_block_share, in pair rows: decode-sized blocks). A template
/// flag, not a test in the loop: the 12-row loop has no register to spare.
template <int ROWS, bool NEXT>
ACTORLLM_AVX512_BF16 __attribute__((always_inline)) inline void dot_pairs(
    const uint32_t* x, int64_t ldx, int64_t pairs, const uint32_t* w, const next_block_share& next,
    __m512& a0, __m512& a1, __m512& a2, __m512& a3, __m512& a4, __m512& a5, __m512& a6, __m512& a7,
    __m512& a8, __m512& a9, __m512& a10, __m512& a11) {
  constexpr int64_t ahead = 1024 / (width * sizeof(uint32_t));
#pragma GCC unroll 4
  for (int64_t k = 0; k < pairs; ++k) {
    _mm_prefetch(reinterpret_cast<const char*>(w + (k + ahead) * width), _MM_HINT_T0);
    if constexpr (NEXT)
      _mm_prefetch(reinterpret_cast<const char*>(w + (block_depth / 2 + next.row(k)) * width),
                   _MM_HINT_T1);
    const __m512bh weights = (__m512bh)_mm512_loadu_si512(w + k * width);
#define ACTORLLM_DOT_ROW(r)                                                                      \
  if constexpr (ROWS > r)                                                                        \
    a##r = _mm512_dpbf16_ps(a##r, (__m512bh)_mm512_set1_epi32(static_cast<int>(x[r * ldx + k])), \
                            weights);
    ACTORLLM_EACH_BF16_ROW(ACTORLLM_DOT_ROW)
#undef ACTORLLM_DOT_ROW
  }
}

/// y rows [0, ROWS) x panel columns [0, cols) (+)= x pairs @ paired block over `pairs` pairs
/// of input features; bias (may be null) added.
template <int ROWS>
ACTORLLM_AVX512_BF16 void pair_tile(const uint32_t* x, int64_t ldx, int64_t pairs,
                                    const uint32_t* w, const next_block_share& next_block,
                                    const float* bias, int64_t cols, bool accumulate_y, float* y,
                                    int64_t ldy) {
  const __mmask16 lanes =
      cols >= width ? __mmask16(0xffff) : static_cast<__mmask16>((1u << cols) - 1);
  // Named accumulators, not an array: GCC keeps an array of vectors on the stack.
  __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
  a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = _mm512_setzero_ps();
  if (accumulate_y) {
#define ACTORLLM_LOAD_ROW(r) \
  if constexpr (ROWS > r) a##r = _mm512_maskz_loadu_ps(lanes, y + r * ldy);
    ACTORLLM_EACH_BF16_ROW(ACTORLLM_LOAD_ROW)
#undef ACTORLLM_LOAD_ROW
  }
  if (next_block.on)
    dot_pairs<ROWS, true>(x, ldx, pairs, w, next_block, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10,
                          a11);
  else
    dot_pairs<ROWS, false>(x, ldx, pairs, w, next_block, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9,
                           a10, a11);
  const __m512 b = bias ? _mm512_maskz_loadu_ps(lanes, bias) : _mm512_setzero_ps();
#define ACTORLLM_STORE_ROW(r) \
  if constexpr (ROWS > r) _mm512_mask_storeu_ps(y + r * ldy, lanes, _mm512_add_ps(a##r, b));
  ACTORLLM_EACH_BF16_ROW(ACTORLLM_STORE_ROW)
#undef ACTORLLM_STORE_ROW
}

constexpr pair_tile_fn pair_tiles[tile_rows + 1] = {
    nullptr,       pair_tile<1>,  pair_tile<2>, pair_tile<3>, pair_tile<4>,
    pair_tile<5>,  pair_tile<6>,  pair_tile<7>, pair_tile<8>, pair_tile<9>,
    pair_tile<10>, pair_tile<11>, pair_tile<12>};

}  // namespace

pair_kernels avx512_bf16_pair_kernels() {
  return {pair_tiles, tile_rows};
}

ACTORLLM_AVX512_BF16 void round_activations_to_bf16(const float* x, int64_t n, int64_t in,
                                                    bf16_activations& out) {
  out.pairs_per_row = in / 2;
  out.storage.resize(static_cast<size_t>(n * out.pairs_per_row));
  for (int64_t r = 0; r < n; ++r) {
    const float* src = x + r * in;
    auto* dst = reinterpret_cast<uint16_t*>(out.storage.data() + r * out.pairs_per_row);
    int64_t k = 0;
    for (; k + 32 <= in; k += 32) {
      const __m512bh bf =
          _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + k + 16), _mm512_loadu_ps(src + k));
      _mm512_storeu_si512(dst + k, (__m512i)bf);
    }
    for (; k < in; ++k) {
      uint32_t bits;
      std::memcpy(&bits, src + k, sizeof bits);
      dst[k] = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
    }
  }
  out.pairs = out.storage.data();
}

}  // namespace actorllm::cpu::panels
