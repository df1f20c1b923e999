// The packed GEMM's AVX2 tiles: a register tile of up to 6 rows by one 16-feature panel (12
// accumulators of 8 floats), streaming the panel along in_features, each weight widened to
// float32 in registers from the panel's format (one instantiation of the tile per format; the
// loaders are panel_loaders.hpp).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/packed_tiles.hpp"
#include "kernels/cpu/panel_loaders.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu::panels {

namespace {

constexpr int64_t tile_rows = 6;

/// M(r) for every row r of a tile.
#define ACTORLLM_EACH_ROW(M) M(0) M(1) M(2) M(3) M(4) M(5)

#define ACTORLLM_ACCUMULATOR_PARAMS                                                          \
  __m256 &a00, __m256 &a01, __m256 &a10, __m256 &a11, __m256 &a20, __m256 &a21, __m256 &a30, \
      __m256 &a31, __m256 &a40, __m256 &a41, __m256 &a50, __m256 &a51
#define ACTORLLM_ACCUMULATORS a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51

/// Several rows: one panel row a step into each row's two accumulators; with NEXT, the tile's
/// share of the next depth block asked for too (next_block_share; as the AVX-512 tiles).
template <weight_format F, int ROWS, bool NEXT>
ACTORLLM_AVX2 __attribute__((always_inline)) inline void accumulate_rows(
    const float* x, const typename panel_loader<F>::element* panel, const next_block_share& next,
    int64_t k0, int64_t k1, ACTORLLM_ACCUMULATOR_PARAMS) {
  using loader = panel_loader<F>;
  constexpr int64_t stride = loader::k_stride;
  constexpr int64_t prefetch_k = 1024 / (stride * sizeof(typename loader::element));
#pragma GCC unroll 4
  for (int64_t k = k0; k < k1; ++k) {
    _mm_prefetch(reinterpret_cast<const char*>(panel + (k + prefetch_k) * stride), _MM_HINT_T0);
    if constexpr (NEXT)
      _mm_prefetch(reinterpret_cast<const char*>(panel + (block_depth + next.row(k)) * stride),
                   _MM_HINT_T1);
    __m256 w0, w1;
    panel_row<F>(panel, k, w0, w1);
#define ACTORLLM_FMA_ROW(r)                                  \
  if constexpr (ROWS > r) {                                  \
    const __m256 xr = _mm256_broadcast_ss(x + k * ROWS + r); \
    a##r##0 = _mm256_fmadd_ps(xr, w0, a##r##0);              \
    a##r##1 = _mm256_fmadd_ps(xr, w1, a##r##1);              \
  }
    ACTORLLM_EACH_ROW(ACTORLLM_FMA_ROW)
#undef ACTORLLM_FMA_ROW
  }
}

/// Adds x rows [0, ROWS) (k-major: tile_fn) times panel rows [k0, k1) to the accumulators
/// a<r>0, a<r>1. Inlined into the tile, so that the accumulators stay in registers.
template <weight_format F, int ROWS>
ACTORLLM_AVX2 __attribute__((always_inline)) inline void accumulate(
    const float* x, const typename panel_loader<F>::element* panel, const next_block_share& next,
    int64_t k0, int64_t k1, ACTORLLM_ACCUMULATOR_PARAMS) {
  using loader = panel_loader<F>;
  constexpr int64_t stride = loader::k_stride;
  // One row (single-stream decode) is a pure stream: it asks 4 KB ahead (several rows:
  // accumulate_rows, 1 KB).
  constexpr int64_t row_bytes = stride * sizeof(typename loader::element);
  constexpr int64_t prefetch_k = 4096 / row_bytes;
  if constexpr (ROWS == 1) {
    // One row has one FMA per accumulator per k: the FMA's latency, not memory, would bound
    // a 16-bit or int8 stream. Even and odd k go to two chains (a1x are free with one row).
    int64_t k = k0;
    for (; k + 1 < k1; k += 2) {
      _mm_prefetch(reinterpret_cast<const char*>(panel + (k + prefetch_k) * stride), _MM_HINT_T0);
      if constexpr (2 * row_bytes > 64)
        _mm_prefetch(reinterpret_cast<const char*>(panel + (k + 1 + prefetch_k) * stride),
                     _MM_HINT_T0);
      __m256 w0, w1, v0, v1;
      panel_row<F>(panel, k, w0, w1);
      panel_row<F>(panel, k + 1, v0, v1);
      const __m256 xk = _mm256_broadcast_ss(x + k), xn = _mm256_broadcast_ss(x + k + 1);
      a00 = _mm256_fmadd_ps(xk, w0, a00);
      a01 = _mm256_fmadd_ps(xk, w1, a01);
      a10 = _mm256_fmadd_ps(xn, v0, a10);
      a11 = _mm256_fmadd_ps(xn, v1, a11);
    }
    if (k < k1) {
      __m256 w0, w1;
      panel_row<F>(panel, k, w0, w1);
      const __m256 xk = _mm256_broadcast_ss(x + k);
      a00 = _mm256_fmadd_ps(xk, w0, a00);
      a01 = _mm256_fmadd_ps(xk, w1, a01);
    }
  } else if (next.on) {
    accumulate_rows<F, ROWS, true>(x, panel, next, k0, k1, ACTORLLM_ACCUMULATORS);
  } else {
    accumulate_rows<F, ROWS, false>(x, panel, next, k0, k1, ACTORLLM_ACCUMULATORS);
  }
}

/// y rows [0, ROWS) x panel columns [0, cols) (+)= x rows @ panel over `depth` input
/// features (x k-major: tile_fn). `accumulate_y`: add to what y holds (a later depth
/// block). bias (may be null) is added by the caller's last depth block. Scaled formats (q8,
/// fp8, q4): each group's sum becomes y's through its group_factors.
template <weight_format F, int ROWS>
ACTORLLM_AVX2 void tile(const float* x, int64_t depth, const void* panel_bytes,
                        const block_groups& groups, const float* bias, int64_t cols,
                        bool accumulate_y, float* y, int64_t ldy) {
  using loader = panel_loader<F>;
  const auto* panel = static_cast<const typename loader::element*>(panel_bytes);
  constexpr bool scaled = is_scaled<F>;
  // Twelve named accumulators, not an array: GCC spills an array of vectors to the stack on
  // every iteration, which made the loop store-bound at a third of its speed.
  __m256 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51;
  a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = _mm256_setzero_ps();
  // Zeroed once: lanes past `cols` (a partial last panel) then hold zeros, never stale bits.
  alignas(32) float buf[width] = {};
  // A full panel (all but a matrix's last) moves straight between registers and y; a
  // partial one goes through buf, whose tail lanes stay zero.
  const bool full = cols == width;
#define ACTORLLM_LOAD_ROW(r)                       \
  if constexpr (ROWS > r) {                        \
    const float* src = y + r * ldy;                \
    if (!full) {                                   \
      std::memcpy(buf, src, cols * sizeof(float)); \
      src = buf;                                   \
    }                                              \
    a##r##0 = _mm256_loadu_ps(src);                \
    a##r##1 = _mm256_loadu_ps(src + 8);            \
  }
  if (accumulate_y) {
    ACTORLLM_EACH_ROW(ACTORLLM_LOAD_ROW)
  }
#undef ACTORLLM_LOAD_ROW
  if constexpr (!scaled) {
    accumulate<F, ROWS>(x, panel, groups.next_block, 0, depth, a00, a01, a10, a11, a20, a21, a30,
                        a31, a40, a41, a50, a51);
    if constexpr (ROWS == 1) {
      a00 = _mm256_add_ps(a00, a10);
      a01 = _mm256_add_ps(a01, a11);
    }
  } else {
    // What y holds (or 0) plus each group's scaled sum, kept here while the accumulators
    // start from zero for every group.
    alignas(32) float total[tile_rows * width];
#define ACTORLLM_SAVE_ROW(r)                         \
  if constexpr (ROWS > r) {                          \
    _mm256_store_ps(total + r * width, a##r##0);     \
    _mm256_store_ps(total + r * width + 8, a##r##1); \
  }
    ACTORLLM_EACH_ROW(ACTORLLM_SAVE_ROW)
#undef ACTORLLM_SAVE_ROW
    const int64_t group = groups.group;
    for (int64_t g0 = 0; g0 < depth; g0 += group) {
      const int64_t g = g0 / group;
      a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = _mm256_setzero_ps();
      accumulate<F, ROWS>(x, panel, groups.next_block, g0, std::min(depth, g0 + group), a00, a01,
                          a10, a11, a20, a21, a30, a31, a40, a41, a50, a51);
      if constexpr (ROWS == 1) {
        a00 = _mm256_add_ps(a00, a10);
        a01 = _mm256_add_ps(a01, a11);
      }
      const group_factors f = factors_of<F>(groups, g);
      // q4: minus zero * scale * (the group's sum of x), the zero points' share of the sum.
      const __m256 zs0 = _mm256_mul_ps(f.zero0, f.scale0), zs1 = _mm256_mul_ps(f.zero1, f.scale1);
#define ACTORLLM_FOLD_ROW(r)                                                          \
  if constexpr (ROWS > r) {                                                           \
    float* t = total + r * width;                                                     \
    __m256 t0 = _mm256_fmadd_ps(a##r##0, f.scale0, _mm256_load_ps(t));                \
    __m256 t1 = _mm256_fmadd_ps(a##r##1, f.scale1, _mm256_load_ps(t + 8));            \
    if constexpr (F == weight_format::q4) {                                           \
      const __m256 sum = _mm256_broadcast_ss(groups.x_sums + r * groups.ld_sums + g); \
      t0 = _mm256_fnmadd_ps(zs0, sum, t0);                                            \
      t1 = _mm256_fnmadd_ps(zs1, sum, t1);                                            \
    }                                                                                 \
    _mm256_store_ps(t, t0);                                                           \
    _mm256_store_ps(t + 8, t1);                                                       \
  }
      ACTORLLM_EACH_ROW(ACTORLLM_FOLD_ROW)
#undef ACTORLLM_FOLD_ROW
    }
#define ACTORLLM_TOTAL_ROW(r)                        \
  if constexpr (ROWS > r) {                          \
    a##r##0 = _mm256_load_ps(total + r * width);     \
    a##r##1 = _mm256_load_ps(total + r * width + 8); \
  }
    ACTORLLM_EACH_ROW(ACTORLLM_TOTAL_ROW)
#undef ACTORLLM_TOTAL_ROW
  }
#define ACTORLLM_STORE_ROW(r)                                         \
  if constexpr (ROWS > r) {                                           \
    float* dst = y + r * ldy;                                         \
    if (full) {                                                       \
      if (bias) {                                                     \
        a##r##0 = _mm256_add_ps(a##r##0, _mm256_loadu_ps(bias));      \
        a##r##1 = _mm256_add_ps(a##r##1, _mm256_loadu_ps(bias + 8));  \
      }                                                               \
      _mm256_storeu_ps(dst, a##r##0);                                 \
      _mm256_storeu_ps(dst + 8, a##r##1);                             \
    } else {                                                          \
      _mm256_store_ps(buf, a##r##0);                                  \
      _mm256_store_ps(buf + 8, a##r##1);                              \
      if (bias)                                                       \
        for (int64_t j = 0; j < cols; ++j) dst[j] = buf[j] + bias[j]; \
      else                                                            \
        std::memcpy(dst, buf, cols * sizeof(float));                  \
    }                                                                 \
  }
  ACTORLLM_EACH_ROW(ACTORLLM_STORE_ROW)
#undef ACTORLLM_STORE_ROW
}

/// dst (depth, 16) = a panel's block widened to float32 (q8, fp8, q4: as unpack_matrix gives
/// the weights), its groups as the tile's. With several row tiles per block, widening once
/// and running the float32 tiles beats widening in every tile: the conversions then cost
/// once per block.
template <weight_format F>
ACTORLLM_AVX2 void widen_block(const void* panel_bytes, const block_groups& groups, int64_t depth,
                               float* dst) {
  using loader = panel_loader<F>;
  constexpr int64_t stride = loader::k_stride;
  constexpr int64_t row_bytes = stride * sizeof(typename loader::element);
  const auto* panel = static_cast<const typename loader::element*>(panel_bytes);
  const int64_t group = groups.group;
  for (int64_t g0 = 0; g0 < depth; g0 += group) {
    const int64_t g = g0 / group;
    group_factors f{};
    if constexpr (is_scaled<F>) f = factors_of<F>(groups, g);
    for (int64_t k = g0; k < std::min(depth, g0 + group); ++k) {
      // The next block toward L2 while the row tiles run over this one's copy (as the float32
      // tiles' next_block), one prefetch per cache line.
      if (groups.next_block.on && (k * row_bytes) % 64 == 0)
        _mm_prefetch(reinterpret_cast<const char*>(panel + (k + block_depth) * stride),
                     _MM_HINT_T1);
      __m256 w0, w1;
      panel_row<F>(panel, k, w0, w1);
      if constexpr (is_scaled<F>) {
        // (loaded - zero) * scale: exactly unpack_matrix's weight (group_factors).
        w0 = _mm256_mul_ps(_mm256_sub_ps(w0, f.zero0), f.scale0);
        w1 = _mm256_mul_ps(_mm256_sub_ps(w1, f.zero1), f.scale1);
      }
      _mm256_store_ps(dst + k * width, w0);
      _mm256_store_ps(dst + k * width + 8, w1);
    }
  }
}

template <weight_format F>
constexpr tile_fn tiles_of[tile_rows + 1] = {nullptr,    tile<F, 1>, tile<F, 2>, tile<F, 3>,
                                             tile<F, 4>, tile<F, 5>, tile<F, 6>};

struct avx2_set {
  static constexpr int64_t max_rows = tile_rows;
  template <weight_format F>
  static constexpr const tile_fn* tiles = tiles_of<F>;
  template <weight_format F>
  static constexpr widen_fn widen = widen_block<F>;
};

}  // namespace

tile_kernels avx2_tiles(weight_format format) {
  return kernels_of<avx2_set>(format);
}

}  // namespace actorllm::cpu::panels
