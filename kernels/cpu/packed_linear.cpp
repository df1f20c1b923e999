// The packed GEMM: a register tile of up to 6 rows by one 16-feature panel (12 accumulators
// of 8 floats), streaming the panel along in_features, each weight widened to float32 in
// registers from the panel's format (one instantiation of the tile per format; the loaders
// are panel_loaders.hpp). Rows are taken in blocks that stay in L2 while every panel of the
// member's slice passes over them.
#include "kernels/cpu/packed_linear.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/panel_loaders.hpp"
#include "kernels/cpu/thread_team.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu {

namespace {

using panels::factors_of;
using panels::group_factors;
using panels::is_scaled;
using panels::panel_loader;
using panels::width;
constexpr int64_t tile_rows = 6;
/// Rows per block: 96 rows of 4096 floats are 1.5 MB, within L3 and mostly in L2 for the
/// usual widths; weights are read once per block, so large prefills read them a few times.
constexpr int64_t block_rows = 96;
/// Input features per depth block: a panel's block (256 x 16 floats, 16 KB) stays in L1
/// while every row tile of the block passes over it.
constexpr int64_t block_depth = 256;
/// Panels per unit of work handed to a member: 64 output features.
constexpr int64_t panels_per_chunk = 4;

/// M(r) for every row r of a tile.
#define ACTORLLM_EACH_ROW(M) M(0) M(1) M(2) M(3) M(4) M(5)

/// Adds x rows [0, ROWS) times panel rows [k0, k1) to the accumulators a<r>0, a<r>1 (ldx:
/// x's row stride). Inlined into the tile, so that the accumulators stay in registers.
template <weight_format F, int ROWS>
ACTORLLM_AVX2 __attribute__((always_inline)) inline void accumulate(
    const float* x, int64_t ldx, const typename panel_loader<F>::element* panel, int64_t k0,
    int64_t k1, __m256& a00, __m256& a01, __m256& a10, __m256& a11, __m256& a20, __m256& a21,
    __m256& a30, __m256& a31, __m256& a40, __m256& a41, __m256& a50, __m256& a51) {
  using loader = panel_loader<F>;
  constexpr int64_t stride = loader::k_stride;
  // The panel comes from DRAM on the first row tile of a block: ask for it this many bytes
  // ahead. One row (single-stream decode) is a pure stream and needs to run further ahead.
  constexpr int64_t row_bytes = stride * sizeof(typename loader::element);
  constexpr int64_t prefetch_k = (ROWS == 1 ? 4096 : 1024) / row_bytes;
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
      loader::load(panel + k * stride, w0, w1);
      loader::load(panel + (k + 1) * stride, v0, v1);
      const __m256 xk = _mm256_broadcast_ss(x + k), xn = _mm256_broadcast_ss(x + k + 1);
      a00 = _mm256_fmadd_ps(xk, w0, a00);
      a01 = _mm256_fmadd_ps(xk, w1, a01);
      a10 = _mm256_fmadd_ps(xn, v0, a10);
      a11 = _mm256_fmadd_ps(xn, v1, a11);
    }
    if (k < k1) {
      __m256 w0, w1;
      loader::load(panel + k * stride, w0, w1);
      const __m256 xk = _mm256_broadcast_ss(x + k);
      a00 = _mm256_fmadd_ps(xk, w0, a00);
      a01 = _mm256_fmadd_ps(xk, w1, a01);
    }
  } else {
#pragma GCC unroll 4
    for (int64_t k = k0; k < k1; ++k) {
      _mm_prefetch(reinterpret_cast<const char*>(panel + (k + prefetch_k) * stride), _MM_HINT_T0);
      __m256 w0, w1;
      loader::load(panel + k * stride, w0, w1);
#define ACTORLLM_FMA_ROW(r)                                 \
  if constexpr (ROWS > r) {                                 \
    const __m256 xr = _mm256_broadcast_ss(x + r * ldx + k); \
    a##r##0 = _mm256_fmadd_ps(xr, w0, a##r##0);             \
    a##r##1 = _mm256_fmadd_ps(xr, w1, a##r##1);             \
  }
      ACTORLLM_EACH_ROW(ACTORLLM_FMA_ROW)
#undef ACTORLLM_FMA_ROW
    }
  }
}

/// A depth block's groups of input features: `group` of them each (the block's depth
/// where it lies within one group). scale and zeros: the first group's 16 per-feature scales
/// and (q4) zero points, the next group's 16 further on. x_sums (q4): x's sum over each
/// group, the first group's of the block's first row, ld_sums apart from row to row.
struct block_groups {
  int64_t group;
  const float* scale;
  const uint8_t* zeros;
  const float* x_sums;
  int64_t ld_sums;
};

/// y rows [0, ROWS) x panel columns [0, cols) (+)= x rows @ panel over `depth` input
/// features; ldx is x's row stride. `accumulate_y`: add to what y holds (a later depth
/// block). bias (may be null) is added by the caller's last depth block. Scaled formats (q8,
/// fp8, q4): each group's sum becomes y's through its group_factors.
template <weight_format F, int ROWS>
ACTORLLM_AVX2 void tile(const float* x, int64_t ldx, int64_t depth, const void* panel_bytes,
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
    accumulate<F, ROWS>(x, ldx, panel, 0, depth, a00, a01, a10, a11, a20, a21, a30, a31, a40, a41,
                        a50, a51);
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
      accumulate<F, ROWS>(x, ldx, panel, g0, std::min(depth, g0 + group), a00, a01, a10, a11, a20,
                          a21, a30, a31, a40, a41, a50, a51);
      if constexpr (ROWS == 1) {
        a00 = _mm256_add_ps(a00, a10);
        a01 = _mm256_add_ps(a01, a11);
      }
      const group_factors f = factors_of<F>(groups.scale + g * width,
                                            groups.zeros ? groups.zeros + g * width : nullptr);
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

using tile_fn = void (*)(const float*, int64_t, int64_t, const void*, const block_groups&,
                         const float*, int64_t, bool, float*, int64_t);

/// dst (depth, 16) = a panel's block widened to float32 (q8, fp8, q4: as unpack_matrix gives
/// the weights), its groups as the tile's. With several row tiles per block, widening once
/// and running the float32 tiles beats widening in every tile: the conversions then cost
/// once per block.
template <weight_format F>
ACTORLLM_AVX2 void widen_block(const void* panel_bytes, const block_groups& groups, int64_t depth,
                               float* dst) {
  using loader = panel_loader<F>;
  constexpr int64_t stride = loader::k_stride;
  const auto* panel = static_cast<const typename loader::element*>(panel_bytes);
  const int64_t group = groups.group;
  for (int64_t g0 = 0; g0 < depth; g0 += group) {
    const int64_t g = g0 / group;
    group_factors f{};
    if constexpr (is_scaled<F>)
      f = factors_of<F>(groups.scale + g * width,
                        groups.zeros ? groups.zeros + g * width : nullptr);
    for (int64_t k = g0; k < std::min(depth, g0 + group); ++k) {
      __m256 w0, w1;
      loader::load(panel + k * stride, w0, w1);
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

using widen_fn = void (*)(const void*, const block_groups&, int64_t, float*);

template <weight_format F>
constexpr tile_fn tiles_of[tile_rows + 1] = {nullptr,    tile<F, 1>, tile<F, 2>, tile<F, 3>,
                                             tile<F, 4>, tile<F, 5>, tile<F, 6>};

/// The tiles reading `w`'s format, its block widener (null for float32), the start of its
/// panels and the bytes of one panel row (one input feature's 16 weights).
struct panel_access {
  const tile_fn* tiles;
  widen_fn widen;
  const unsigned char* base;
  int64_t row_bytes;
};

panel_access access_of(const packed_matrix& w) {
  using F = weight_format;
  switch (w.format) {
    case F::f16:
      return {tiles_of<F::f16>, widen_block<F::f16>,
              reinterpret_cast<const unsigned char*>(w.panels16.data()), 2 * width};
    case F::bf16:
      return {tiles_of<F::bf16>, widen_block<F::bf16>,
              reinterpret_cast<const unsigned char*>(w.panels16.data()), 2 * width};
    case F::q8:
      return {tiles_of<F::q8>, widen_block<F::q8>,
              reinterpret_cast<const unsigned char*>(w.panels8.data()), width};
    case F::fp8:
      return {tiles_of<F::fp8>, widen_block<F::fp8>,
              reinterpret_cast<const unsigned char*>(w.panels8.data()), width};
    case F::q4:
      return {tiles_of<F::q4>, widen_block<F::q4>, w.panels4.data(), width / 2};
    case F::f32:
      break;
  }
  return {tiles_of<F::f32>, nullptr, reinterpret_cast<const unsigned char*>(w.panels.data()),
          4 * width};
}

/// The depth blocks of a matrix, the same for every panel: each is whole groups, or lies
/// within one group (groups deeper than block_depth). A block's segments are what the tile
/// folds one at a time: its groups, or the block itself; numbered across the blocks.
struct depth_blocks {
  struct block {
    int64_t k0, depth, group, first_segment;
  };
  std::vector<block> list;
  int64_t num_segments = 0;
};

depth_blocks depth_blocks_of(const packed_matrix& w) {
  const int64_t in = w.in_features, group = w.group_length();
  depth_blocks blocks;
  for (int64_t k0 = 0, depth = 0; k0 < in; k0 += depth) {
    depth = group >= block_depth ? std::min(block_depth, group - k0 % group)
                                 : block_depth / group * group;
    depth = std::min(depth, in - k0);
    const int64_t segment = std::min(group, depth);
    blocks.list.push_back({k0, depth, segment, blocks.num_segments});
    blocks.num_segments += depth / segment;
  }
  return blocks;
}

/// Whether every slice but the last ends on a panel boundary (then panels write in place).
bool slices_on_panels(std::span<const output_slice> slices) {
  for (size_t i = 0; i + 1 < slices.size(); ++i)
    if (slices[i].num_features % width != 0) return false;
  return true;
}

}  // namespace

bool packed_linear_supported() {
  return cpu_has_avx2();
}

void linear_packed_split(const float* x, const packed_matrix& w, const float* bias, int64_t n,
                         std::span<const output_slice> slices) {
  const int64_t in = w.in_features, out = w.out_features;
  if (!packed_linear_supported())
    throw std::logic_error("linear_packed needs AVX2 and FMA (see packed_linear_supported())");
  if (!slices_on_panels(slices)) {
    // A panel would straddle two slices: compute the whole output, then cut it.
    std::vector<float> whole(n * out);
    linear_packed(x, w, bias, n, whole.data());
    int64_t first = 0;
    for (const auto& s : slices) {
      for (int64_t i = 0; i < n; ++i)
        std::copy_n(whole.data() + i * out + first, s.num_features, s.dst + i * s.num_features);
      first += s.num_features;
    }
    return;
  }
  if (!w.input_order.empty()) {
    // Panel row j holds input feature input_order[j]: x read in that order. (After the cut
    // above, which calls back in here: x is reordered once.)
    thread_local std::vector<float> reordered;
    reordered.resize(n * in);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < in; ++j) reordered[i * in + j] = x[i * in + w.input_order[j]];
    x = reordered.data();
  }
  const panel_access access = access_of(w);
  const depth_blocks blocks = depth_blocks_of(w);
  // q4: each row's sum of x over each segment, for the zero points' share (block_groups).
  // (Read through a pointer: the team's other threads see their own thread_locals.)
  thread_local std::vector<float> x_sum_buffer;
  const float* x_sums = nullptr;
  if (w.format == weight_format::q4) {
    const int64_t num_segments = blocks.num_segments;
    x_sum_buffer.assign(n * num_segments, 0.0f);
    for (const auto& b : blocks.list)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = b.k0; k < b.k0 + b.depth; ++k)
          x_sum_buffer[i * num_segments + b.first_segment + (k - b.k0) / b.group] += x[i * in + k];
    x_sums = x_sum_buffer.data();
  }
  // Where panel p's features go: its slice's tensor, column and row stride.
  struct target {
    float* dst;
    int64_t ld;
  };
  auto target_of = [&](int64_t col0) {
    int64_t start = 0;
    for (const auto& s : slices) {
      if (col0 < start + s.num_features) return target{s.dst + (col0 - start), s.num_features};
      start += s.num_features;
    }
    return target{nullptr, 0};  // unreachable: the widths sum to out_features
  };
  auto run_panels = [&](int64_t first, int64_t last) {
    alignas(64) float widened[block_depth * width];  // one block of a 16-bit or int8 panel
    for (int64_t r0 = 0; r0 < n; r0 += block_rows) {
      const int64_t rows_in_block = std::min(block_rows, n - r0);
      // Tiles of nearly equal height (32 rows: 6 6 5 5 5 5, not 6 6 6 6 6 2): a tile costs
      // one pass over the panel whatever its height.
      const int64_t num_tiles = (rows_in_block + tile_rows - 1) / tile_rows;
      for (int64_t p = first; p < last; ++p) {
        const unsigned char* panel = access.base + p * in * access.row_bytes;
        const int64_t col0 = p * width, cols = std::min(width, out - col0);
        const float* b = bias ? bias + col0 : nullptr;
        const target t = target_of(col0);
        float* y = t.dst + r0 * t.ld;
        for (const auto& d : blocks.list) {
          const int64_t k0 = d.k0, depth = d.depth;
          const bool last_block = k0 + depth == in;
          const void* block = panel + k0 * access.row_bytes;
          const int64_t at = (p * w.num_groups() + k0 / w.group_length()) * width;
          const block_groups groups{d.group, w.scales.empty() ? nullptr : w.scales.data() + at,
                                    w.zeros.empty() ? nullptr : w.zeros.data() + at,
                                    x_sums ? x_sums + d.first_segment : nullptr,
                                    blocks.num_segments};
          const tile_fn* tiles = access.tiles;
          if (access.widen && num_tiles > 1) {
            access.widen(block, groups, depth, widened);
            block = widened;
            tiles = tiles_of<weight_format::f32>;
          }
          int64_t r = 0;
          for (int64_t i = 0; i < num_tiles; ++i) {
            const int64_t rows = rows_in_block / num_tiles + (i < rows_in_block % num_tiles);
            block_groups tile_groups = groups;
            if (groups.x_sums) tile_groups.x_sums += (r0 + r) * blocks.num_segments;
            tiles[rows](x + (r0 + r) * in + k0, in, depth, block, tile_groups,
                        last_block ? b : nullptr, cols, k0 > 0, y + r * t.ld, t.ld);
            r += rows;
          }
        }
      }
    }
  };
  if (n * in * out < min_parallel_macs) return run_panels(0, w.num_panels());
  // Panels are handed out a few at a time rather than split in halves up front: a member
  // that was preempted, or whose weights came slower from memory, takes fewer.
  const int64_t num_chunks = (w.num_panels() + panels_per_chunk - 1) / panels_per_chunk;
  parallel_for_dynamic(num_chunks, 1, [&](int, int64_t c) {
    run_panels(c * panels_per_chunk, std::min(w.num_panels(), (c + 1) * panels_per_chunk));
  });
}

void linear_packed(const float* x, const packed_matrix& w, const float* bias, int64_t n, float* y) {
  const output_slice whole{w.out_features, y};
  linear_packed_split(x, w, bias, n, {&whole, 1});
}

}  // namespace actorllm::cpu
