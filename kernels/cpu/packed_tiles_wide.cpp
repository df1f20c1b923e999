// The AVX-512 wide tiles: float32 panels two at a time (32 output features) over up to 12 rows
// of x. A one-panel tile of 16 rows loads 17 values (the panel row and 16 broadcasts of x) for
// 16 multiply-adds, so that the load ports, not the FMA units, set its pace; here each
// broadcast feeds both panels, 14 loads for 24 multiply-adds.
#include <immintrin.h>

#include "kernels/cpu/packed_tiles.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t width = packed_matrix::panel_width;
constexpr int64_t wide_rows = 12;

/// M(r) for every row r of a wide tile.
#define ACTORLLM_EACH_WIDE_ROW(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11)
#define ACTORLLM_WIDE_PARAMS                                                                      \
  __m512 &a0, __m512 &a1, __m512 &a2, __m512 &a3, __m512 &a4, __m512 &a5, __m512 &a6, __m512 &a7, \
      __m512 &a8, __m512 &a9, __m512 &a10, __m512 &a11, __m512 &b0, __m512 &b1, __m512 &b2,       \
      __m512 &b3, __m512 &b4, __m512 &b5, __m512 &b6, __m512 &b7, __m512 &b8, __m512 &b9,         \
      __m512 &b10, __m512 &b11
#define ACTORLLM_WIDE_ACCUMULATORS \
  a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11

/// Adds x rows [0, ROWS) times both panels' rows [0, depth) to a<r> (the first panel) and
/// b<r> (the second). With NEXT each step also asks for its share of both panels' next
/// blocks (a template flag, as the one-panel tiles', to keep the loop's registers).
template <int ROWS, bool NEXT>
ACTORLLM_AVX512 __attribute__((always_inline)) inline void accumulate_wide(
    const float* x, int64_t depth, const two_panels& panels, const next_block_share& next,
    ACTORLLM_WIDE_PARAMS) {
  const float* w0 = panels.w[0];
  const float* w1 = panels.w[1];
  const float* next0 = panels.next[0];
  const float* next1 = panels.next[1];
#pragma GCC unroll 2
  for (int64_t k = 0; k < depth; ++k) {
    if constexpr (NEXT) {
      const int64_t row = next.row(k);
      _mm_prefetch(reinterpret_cast<const char*>(next0 + row * width), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(next1 + row * width), _MM_HINT_T1);
    }
    const __m512 u = _mm512_loadu_ps(w0 + k * width);
    const __m512 v = _mm512_loadu_ps(w1 + k * width);
#define ACTORLLM_FMA_WIDE_ROW(r)                       \
  if constexpr (ROWS > r) {                            \
    const __m512 xr = _mm512_set1_ps(x[k * ROWS + r]); \
    a##r = _mm512_fmadd_ps(xr, u, a##r);               \
    b##r = _mm512_fmadd_ps(xr, v, b##r);               \
  }
    ACTORLLM_EACH_WIDE_ROW(ACTORLLM_FMA_WIDE_ROW)
#undef ACTORLLM_FMA_WIDE_ROW
  }
}

/// The wide_tile_fn of ROWS rows (packed_tiles.hpp).
template <int ROWS>
ACTORLLM_AVX512 void wide_tile(const float* x, int64_t depth, const two_panels& panels,
                               const next_block_share& next, bool accumulate_y) {
  const auto lanes_of = [](int64_t cols) {
    return cols >= width ? __mmask16(0xffff) : static_cast<__mmask16>((1u << cols) - 1);
  };
  const __mmask16 lanes0 = lanes_of(panels.cols[0]), lanes1 = lanes_of(panels.cols[1]);
  float* y0 = panels.y[0];
  float* y1 = panels.y[1];
  const int64_t ld0 = panels.ldy[0], ld1 = panels.ldy[1];
  // Named accumulators, not arrays: GCC keeps an array of vectors on the stack.
  __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;
  __m512 b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11;
  a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = _mm512_setzero_ps();
  b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = b10 = b11 = _mm512_setzero_ps();
  if (accumulate_y) {
#define ACTORLLM_LOAD_WIDE_ROW(r)                       \
  if constexpr (ROWS > r) {                             \
    a##r = _mm512_maskz_loadu_ps(lanes0, y0 + r * ld0); \
    b##r = _mm512_maskz_loadu_ps(lanes1, y1 + r * ld1); \
  }
    ACTORLLM_EACH_WIDE_ROW(ACTORLLM_LOAD_WIDE_ROW)
#undef ACTORLLM_LOAD_WIDE_ROW
  }
  if (next.on)
    accumulate_wide<ROWS, true>(x, depth, panels, next, ACTORLLM_WIDE_ACCUMULATORS);
  else
    accumulate_wide<ROWS, false>(x, depth, panels, next, ACTORLLM_WIDE_ACCUMULATORS);
  const __m512 bias0 =
      panels.bias[0] ? _mm512_maskz_loadu_ps(lanes0, panels.bias[0]) : _mm512_setzero_ps();
  const __m512 bias1 =
      panels.bias[1] ? _mm512_maskz_loadu_ps(lanes1, panels.bias[1]) : _mm512_setzero_ps();
#define ACTORLLM_STORE_WIDE_ROW(r)                                           \
  if constexpr (ROWS > r) {                                                  \
    _mm512_mask_storeu_ps(y0 + r * ld0, lanes0, _mm512_add_ps(a##r, bias0)); \
    _mm512_mask_storeu_ps(y1 + r * ld1, lanes1, _mm512_add_ps(b##r, bias1)); \
  }
  ACTORLLM_EACH_WIDE_ROW(ACTORLLM_STORE_WIDE_ROW)
#undef ACTORLLM_STORE_WIDE_ROW
}

constexpr wide_tile_fn wide_tiles[wide_rows + 1] = {
    nullptr,       wide_tile<1>,  wide_tile<2>, wide_tile<3>, wide_tile<4>,
    wide_tile<5>,  wide_tile<6>,  wide_tile<7>, wide_tile<8>, wide_tile<9>,
    wide_tile<10>, wide_tile<11>, wide_tile<12>};

}  // namespace

void add_avx512_wide_tiles(tile_kernels& kernels) {
  kernels.wide_tiles = wide_tiles;
  kernels.wide_max_rows = wide_rows;
}

}  // namespace actorllm::cpu::panels
