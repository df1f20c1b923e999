// The packed GEMM's bf16 batches on AMX (the amx set): Intel's tile registers multiply a
// 16 x 32 tile of x (rows by bf16 input features) by a 16 x 16 tile of bf16 pairs (pair rows
// by output features) into a 16 x 16 float32 tile in one instruction (tdpbf16ps): 16384
// multiply-adds, where vdpbf16ps does 32. One core reached 3.3 TFLOP/s in a loop of them,
// against 0.23 for the AVX-512 FMAs, so the weights' stream bounds every batch.
//
// A bf16 panel is packed in pairs (packed_matrix::panels16): 16 of its pair rows, 32 input
// features of the panel's 16 output features, are 1 KB in a row, which is exactly tdpbf16ps's
// B operand (16 rows of 64 bytes). x, rounded to bf16 once per GEMM (bf16_activations), is
// the A operand read in place, 16 rows of 64 bytes at x's row stride.
//
// The tiles are a thread's state: each call configures them for the rows it multiplies and
// releases them before it returns, so a thread holds no tile state between GEMMs.
#include <immintrin.h>

// GCC 12's AVX-512 conversion intrinsics pass an _mm512_undefined_* operand that its own
// analysis then calls uninitialized (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <algorithm>
#include <utility>

#include "kernels/cpu/packed_tiles.hpp"

#define ACTORLLM_AMX                                                                 \
  __attribute__((                                                                    \
      target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,amx-tile," \
             "amx-bf16")))

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t width = packed_matrix::panel_width;
/// Pair rows per B tile (32 input features) and rows per A and C tile.
constexpr int64_t tile_depth = 16;
constexpr int64_t tile_rows = 16;

/// The tile configuration (palette 1): the layout ldtilecfg reads.
struct alignas(64) tile_config {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

/// The tiles: C[i][j] accumulates A[i] @ B[j], for the first 16 rows of x (i = 0) and the
/// next 16 (i = 1), and two panels (j = 0, 1). Macros, not constants: the tile intrinsics
/// paste their tile number into the instruction's text.
#define AMX_C00 0
#define AMX_C01 1
#define AMX_C10 2
#define AMX_C11 3
#define AMX_A0 4
#define AMX_A1 5
#define AMX_B0 6
#define AMX_B1 7

/// Configures the tiles for `first` rows in A0, C00, C01 and `second` (0 to 16) in A1, C10,
/// C11.
ACTORLLM_AMX void configure(int64_t first, int64_t second) {
  tile_config config;
  const auto set = [&](int t, int64_t rows) {
    config.rows[t] = static_cast<uint8_t>(rows);
    config.bytes_per_row[t] = rows > 0 ? 64 : 0;
  };
  for (int t : {AMX_C00, AMX_C01, AMX_A0}) set(t, first);
  for (int t : {AMX_C10, AMX_C11, AMX_A1}) set(t, second);
  set(AMX_B0, tile_depth);
  set(AMX_B1, tile_depth);
  _tile_loadconfig(&config);
}

/// y = C (rows x 16, stored at 64 bytes a row) * scale + bias, columns [0, cols).
ACTORLLM_AMX void store_rows(const float* c, int64_t rows, const amx_panel& p) {
  const __mmask16 lanes =
      p.cols >= width ? __mmask16(0xffff) : static_cast<__mmask16>((1u << p.cols) - 1);
  const __m512 b = p.bias ? _mm512_maskz_loadu_ps(lanes, p.bias) : _mm512_setzero_ps();
  if (p.scale) {
    const __m512 s = _mm512_maskz_loadu_ps(lanes, p.scale);
    for (int64_t r = 0; r < rows; ++r)
      _mm512_mask_storeu_ps(p.y + r * p.ldy, lanes,
                            _mm512_fmadd_ps(_mm512_load_ps(c + r * width), s, b));
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    _mm512_mask_storeu_ps(p.y + r * p.ldy, lanes, _mm512_add_ps(_mm512_load_ps(c + r * width), b));
}

/// Pair rows [0, pairs) of per-channel int8 codes (amx_panel::codes) as bf16 pairs.
ACTORLLM_AMX __attribute__((always_inline)) inline void convert_codes(const int8_t* codes,
                                                                      int64_t pairs,
                                                                      uint32_t* out) {
  // A code's float32 is exact, and so its top half is its bf16: input feature 2j's into the
  // low half of each lane, 2j + 1's into the high.
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t j = 0; j < pairs; ++j) {
    const __m512i even = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 2 * j * width)))));
    const __m512i odd = _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + (2 * j + 1) * width)))));
    _mm512_storeu_si512(out + j * width,
                        _mm512_or_si512(_mm512_srli_epi32(even, 16), _mm512_and_si512(odd, high)));
  }
}

/// x rows [0, 16 + second) (two A tiles when TWO_ROWS) @ one or two panels over `pairs` pair
/// rows (a multiple of 16), into the panels' y. The tiles are configured for these rows. With
/// CODES the panels are int8 codes (amx_panel::codes), converted a B tile at a time.
template <bool TWO_ROWS, bool TWO_PANELS, bool CODES>
ACTORLLM_AMX void multiply(const uint32_t* x, int64_t ldx, int64_t first, int64_t second,
                           int64_t pairs, const amx_panel* p) {
  const int64_t x_stride = ldx * static_cast<int64_t>(sizeof(uint32_t));
  constexpr int64_t w_stride = width * sizeof(uint32_t);
  _tile_zero(AMX_C00);
  if constexpr (TWO_PANELS) _tile_zero(AMX_C01);
  if constexpr (TWO_ROWS) _tile_zero(AMX_C10);
  if constexpr (TWO_ROWS && TWO_PANELS) _tile_zero(AMX_C11);
  // Two B tiles a panel, alternate steps, so that a step's conversion does not wait on the
  // tile loads of the step before.
  alignas(64) uint32_t converted[2][2][tile_depth * width];
  for (int64_t k = 0; k < pairs; k += tile_depth) {
    _tile_loadd(AMX_A0, x + k, x_stride);
    // This step's B tiles: the panels' pair rows from k on, or their codes' made here.
    const uint32_t* b0;
    const uint32_t* b1 = nullptr;
    if constexpr (CODES) {
      uint32_t(&made)[2][tile_depth * width] = converted[(k / tile_depth) % 2];
      convert_codes(p[0].codes + 2 * k * width, tile_depth, made[0]);
      b0 = made[0];
      if constexpr (TWO_PANELS) {
        convert_codes(p[1].codes + 2 * k * width, tile_depth, made[1]);
        b1 = made[1];
      }
    } else {
      b0 = p[0].w + k * width;
      if constexpr (TWO_PANELS) b1 = p[1].w + k * width;
    }
    _tile_loadd(AMX_B0, b0, w_stride);
    _tile_dpbf16ps(AMX_C00, AMX_A0, AMX_B0);
    if constexpr (TWO_ROWS) {
      _tile_loadd(AMX_A1, x + tile_rows * ldx + k, x_stride);
      _tile_dpbf16ps(AMX_C10, AMX_A1, AMX_B0);
    }
    if constexpr (TWO_PANELS) {
      _tile_loadd(AMX_B1, b1, w_stride);
      _tile_dpbf16ps(AMX_C01, AMX_A0, AMX_B1);
      if constexpr (TWO_ROWS) _tile_dpbf16ps(AMX_C11, AMX_A1, AMX_B1);
    }
  }
  alignas(64) float c[tile_rows * width];
  constexpr int64_t c_stride = width * sizeof(float);
  _tile_stored(AMX_C00, c, c_stride);
  store_rows(c, first, p[0]);
  if constexpr (TWO_PANELS) {
    _tile_stored(AMX_C01, c, c_stride);
    store_rows(c, first, p[1]);
  }
  if constexpr (TWO_ROWS) {
    _tile_stored(AMX_C10, c, c_stride);
    amx_panel lower = p[0];
    lower.y += tile_rows * lower.ldy;
    store_rows(c, second, lower);
    if constexpr (TWO_PANELS) {
      _tile_stored(AMX_C11, c, c_stride);
      lower = p[1];
      lower.y += tile_rows * lower.ldy;
      store_rows(c, second, lower);
    }
  }
}

template <bool CODES>
ACTORLLM_AMX void multiply_block(const uint32_t* x, int64_t ldx, int64_t rows, int64_t pairs,
                                 const amx_panel* p, int num_panels) {
  const int64_t first = std::min(rows, tile_rows), second = rows - first;
  if (second > 0)
    num_panels == 2 ? multiply<true, true, CODES>(x, ldx, first, second, pairs, p)
                    : multiply<true, false, CODES>(x, ldx, first, second, pairs, p);
  else
    num_panels == 2 ? multiply<false, true, CODES>(x, ldx, first, second, pairs, p)
                    : multiply<false, false, CODES>(x, ldx, first, second, pairs, p);
}

}  // namespace

ACTORLLM_AMX void round_rows_to_bf16_pairs(const float* rows, int64_t depth, uint32_t* pairs) {
  // vcvtne2ps2bf16 gives row 2j's 16 values, then row 2j + 1's; the permutation interleaves
  // them feature by feature.
  alignas(64) static const uint16_t interleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                      21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                      11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i index = _mm512_load_si512(interleave);
  for (int64_t j = 0; j < depth / 2; ++j) {
    const __m512 even = _mm512_load_ps(rows + 2 * j * width);
    const __m512 odd = _mm512_load_ps(rows + (2 * j + 1) * width);
    const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(odd, even);
    _mm512_storeu_si512(pairs + j * width, _mm512_permutexvar_epi16(index, both));
  }
}

ACTORLLM_AMX void amx_bf16_panels(const bf16_activations& x, int64_t n, int64_t pairs,
                                  int64_t num_panels, const amx_panel_fn& panel_of) {
  const int64_t block = 2 * tile_rows;
  // Whole 32-row blocks first, then the last, shorter one: one configuration each. Panels
  // outside, rows inside: a pair of panels (2 KB per 32 input features) stays in L2 while
  // every row block passes over it.
  const int64_t whole = n / block * block;
  for (const auto& [r_begin, r_end] : {std::pair{int64_t(0), whole}, std::pair{whole, n}}) {
    if (r_begin == r_end) continue;
    const int64_t rows = std::min(block, r_end - r_begin);
    configure(std::min(rows, tile_rows), rows - std::min(rows, tile_rows));
    for (int64_t p = 0; p < num_panels; p += 2) {
      const int count = p + 1 < num_panels ? 2 : 1;
      const amx_panel panel[2] = {panel_of(p), count == 2 ? panel_of(p + 1) : amx_panel{}};
      for (int64_t r0 = r_begin; r0 < r_end; r0 += block) {
        amx_panel targets[2] = {panel[0], panel[1]};
        for (auto& t : targets) t.y += r0 * t.ldy;
        const uint32_t* rows_x = x.pairs + r0 * x.pairs_per_row;
        if (panel[0].codes)
          multiply_block<true>(rows_x, x.pairs_per_row, rows, pairs, targets, count);
        else
          multiply_block<false>(rows_x, x.pairs_per_row, rows, pairs, targets, count);
      }
    }
  }
  _tile_release();
}

}  // namespace actorllm::cpu::panels
