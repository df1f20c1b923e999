#pragma once
// The packed GEMM's register tiles (packed_linear.cpp's driver and the per-instruction-set
// files packed_tiles_avx2.cpp and packed_tiles_avx512.cpp): what one tile computes, and the
// set of tiles one instruction set offers for one panel format.
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cpu/packed_linear.hpp"

namespace actorllm::cpu::panels {

/// Input features per depth block of the packed GEMM: a panel's block (256 x 16 floats, 16 KB)
/// stays in L1 while every row tile of a block passes over it.
constexpr int64_t block_depth = 256;

/// What a row tile over a float32 or 16-bit panel, or a widener, asks for of the next depth
/// block (the panel rows block_depth on: past the panel's last, the next panel's, as they lie
/// end to end), into L2 while it reads this one: with `on`, for the k-th row it reads, row
/// block_depth + row(k) (in pair rows, block_depth / 2 on, for the pair tiles). A prefetch
/// never faults, so the matrix's last block may ask past its end.
struct next_block_share {
  bool on = false;
  int64_t first = 0;
  int64_t step = 0;  ///< rows of the share per row read, times 2^16
  int64_t row(int64_t k) const { return first + ((k * step) >> 16); }
};

/// The share of row tile i of a block's num_tiles, over a block of `rows` panel rows: the
/// rows from i * rows / num_tiles up to the next tile's first, one asked for at each of the
/// tile's `rows` reads, evenly spread (step rounded up, so that the last may ask for the next
/// share's first row; none goes unasked). Split so, the block's requests go out while the
/// tiles run; asked for by the first tile alone, they came in a burst while the memory then
/// idled under the others (float32, 32 rows, a model's chain of GEMMs from DRAM: about 1.1x).
/// Every tile asks: three wide tiles of 32 rows, with the first two asking for halves, each
/// row twice, left the memory idle under the third (the same chain about 1.03x).
inline next_block_share next_block_share_of(int64_t i, int64_t num_tiles, int64_t rows) {
  const int64_t first = i * rows / num_tiles, end = (i + 1) * rows / num_tiles;
  return {true, first, ((end - first) * 65536 + rows - 1) / rows};
}

/// A depth block's groups of input features: `group` of them each (the block's depth
/// where it lies within one group). scale (q8, fp8) or half_scale (q4, times scale_unit) and
/// zeros (q4; null: every group's is common_zero): the first group's 16 per-feature scales
/// and zero points, the next group's 16 further on. x_sums (q4): x's sum over each group, the
/// first group's of the block's first row, ld_sums apart from row to row.
struct block_groups {
  int64_t group;
  const float* scale;
  const uint16_t* half_scale;
  float scale_unit;
  const uint8_t* zeros;
  int common_zero;
  const float* x_sums;
  int64_t ld_sums;
  /// What of the next depth block the tile (of several rows) or the widener asks for.
  next_block_share next_block;
};

/// y rows [0, rows) x panel columns [0, cols) (+)= x rows @ panel over `depth` input
/// features; ldy is y's row stride. x holds the tile's rows k-major, (depth, rows): value k of
/// row r at x[k * rows + r], so that a step's broadcasts read one line from one base
/// (tile_rows_k_major; with each row at its own stride the rows' addresses took more general
/// registers than there are: gemm_bench float32 at 32 to 512 rows about 1.2x). `accumulate_y`:
/// add to what y holds (a later depth block). bias (may be null) is added by the caller's last
/// depth block. Scaled formats (q8, fp8, q4): each group's sum becomes y's through its scales
/// (and q4's zero points).
using tile_fn = void (*)(const float* x, int64_t depth, const void* panel,
                         const block_groups& groups, const float* bias, int64_t cols,
                         bool accumulate_y, float* y, int64_t ldy);

/// dst (depth, 16) = a panel's block widened to float32 (q8, fp8, q4: as unpack_matrix gives
/// the weights), its groups as the tile's. With several row tiles per block, widening once
/// and running the float32 tiles beats widening in every tile.
using widen_fn = void (*)(const void* panel, const block_groups& groups, int64_t depth, float* dst);

/// Two float32 panels side by side (32 output features) for a wide tile: each panel's depth
/// block, where its next block starts (the same panel deeper, or past its last block the
/// panel two on, the next pair's), its bias (null: none, or not the last block), width
/// (1 to 16) and output rows.
struct two_panels {
  const float* w[2];
  const float* next[2];
  const float* bias[2];
  int64_t cols[2];
  float* y[2];
  int64_t ldy[2];
};

/// y (+)= x rows [0, rows) @ both of `panels` over `depth` input features, x k-major as
/// tile_fn's; each asks for its share `next` (next_block_share, of `depth` rows) of both
/// panels' next blocks. One broadcast of x feeds both panels: a step loads 2 + rows values
/// for 2 x rows multiply-adds, where a one-panel tile loads 1 + rows for rows.
using wide_tile_fn = void (*)(const float* x, int64_t depth, const two_panels& panels,
                              const next_block_share& next, bool accumulate_y);

/// One instruction set's kernels for one panel format.
struct tile_kernels {
  const tile_fn* tiles;      ///< [rows] for rows in 1..max_rows ([0] unused)
  const tile_fn* f32_tiles;  ///< the same over a widened float32 block
  widen_fn widen;            ///< null for float32 panels
  int64_t max_rows;
  /// Float32 panels two at a time: wide_tiles[rows] for rows in 1..wide_max_rows; null
  /// where the set or format has none.
  const wide_tile_fn* wide_tiles = nullptr;
  int64_t wide_max_rows = 0;
};

/// The tile_kernels of `format` from one instruction set's templates: Set::tiles<F> (the
/// tile_fn table of format F), Set::widen<F> (its widener) and Set::max_rows.
template <typename Set>
tile_kernels kernels_of(weight_format format) {
  using F = weight_format;
  const tile_fn* f32 = Set::template tiles<F::f32>;
  switch (format) {
    case F::f16:
      return {Set::template tiles<F::f16>, f32, Set::template widen<F::f16>, Set::max_rows};
    case F::bf16:
      return {Set::template tiles<F::bf16>, f32, Set::template widen<F::bf16>, Set::max_rows};
    case F::q8:
      return {Set::template tiles<F::q8>, f32, Set::template widen<F::q8>, Set::max_rows};
    case F::fp8:
      return {Set::template tiles<F::fp8>, f32, Set::template widen<F::fp8>, Set::max_rows};
    case F::q4:
      return {Set::template tiles<F::q4>, f32, Set::template widen<F::q4>, Set::max_rows};
    case F::f32:
      break;
  }
  return {f32, f32, nullptr, Set::max_rows};
}

/// AVX2 + FMA + F16C: tiles of up to 6 rows, two 8-float registers per row.
tile_kernels avx2_tiles(weight_format format);
/// AVX-512 (F, BW, VL, DQ): tiles of up to 16 rows, one 16-float register per row; float32
/// panels also two at a time (add_avx512_wide_tiles).
tile_kernels avx512_tiles(weight_format format);
/// Sets `kernels`' wide tiles to AVX-512's, of up to 12 rows (packed_tiles_wide.cpp).
void add_avx512_wide_tiles(tile_kernels& kernels);

/// x rows quantized to int8 for the integer path (int8_activations.cpp), per block of `block`
/// input features: codes (rows, in), and each block's scale (x ~ scale * code, scale =
/// max |x| / 127) and code sum, both (rows, in / block). The storage vectors back the
/// pointers.
struct int8_activations {
  static constexpr int64_t block = 32;
  /// Rows an integer_dot_fn takes at once (rows() of its view); a batch is run in such groups.
  static constexpr int64_t max_rows = 4;
  int64_t rows = 0;
  const int8_t* codes = nullptr;
  const float* scales = nullptr;
  const int32_t* sums = nullptr;
  std::vector<int8_t> storage_codes;
  std::vector<float> storage_scales;
  std::vector<int32_t> storage_sums;
};

/// Whether the integer path runs `w` for n rows: q8 or q4 panels, at least one row, and
/// in_features and the group length multiples of int8_activations::block. A batch of any size
/// takes it, max_rows rows at a time over each panel (the panel stays in cache between them):
/// a row's result does not depend on the batch it is in.
bool integer_dot_applies(const packed_matrix& w, int64_t n);
/// Quantizes x (n, in) into `out` (in a multiple of the block).
void quantize_activations(const float* x, int64_t n, int64_t in, int8_activations& out);
/// Rows [first, first + count) of `x` (count <= max_rows), as a view without storage of its own.
int8_activations activation_rows(const int8_activations& x, int64_t in, int64_t first,
                                 int64_t count);

/// y rows [0, x.rows) x panel columns [0, cols) = x @ panel `panel` of w + bias (may be
/// null); ldy is y's row stride. One integer_dot_fn per instruction set.
using integer_dot_fn = void (*)(const int8_activations& x, const packed_matrix& w, int64_t panel,
                                const float* bias, int64_t cols, float* y, int64_t ldy);
/// Through AVX-512 VNNI (cpu_runs(kernel_isa::avx512_vnni)): packed_dot_vnni.cpp.
void integer_dot_panel_vnni(const int8_activations& x, const packed_matrix& w, int64_t panel,
                            const float* bias, int64_t cols, float* y, int64_t ldy);
/// Through AVX2 vpmaddubsw (cpu_runs(kernel_isa::avx2_int8)): packed_dot_avx2.cpp.
void integer_dot_panel_avx2(const int8_activations& x, const packed_matrix& w, int64_t panel,
                            const float* bias, int64_t cols, float* y, int64_t ldy);

/// x rows rounded to bf16 (round to nearest even) for the bf16 dot-product tiles: (rows,
/// in / 2) pairs, input feature 2j in the low half of pair j.
struct bf16_activations {
  int64_t pairs_per_row = 0;
  const uint32_t* pairs = nullptr;
  std::vector<uint32_t> storage;
};
/// Rounds x (n, in; in even) into `out` (cpu_runs(kernel_isa::avx512_bf16)).
void round_activations_to_bf16(const float* x, int64_t n, int64_t in, bf16_activations& out);

/// y rows [0, rows) x panel columns [0, cols) (+)= x pairs @ a paired block over `pairs` pairs
/// of input features (ldx: x's row stride in pairs); next_block as block_groups', in pair rows;
/// accumulate_y and bias as tile_fn's.
using pair_tile_fn = void (*)(const uint32_t* x, int64_t ldx, int64_t pairs, const uint32_t* w,
                              const next_block_share& next_block, const float* bias, int64_t cols,
                              bool accumulate_y, float* y, int64_t ldy);
/// The pair tiles: tiles[rows] for rows in 1..max_rows ([0] unused), over row blocks as the
/// AVX-512 tiles'. They read a bf16 panel's blocks as packed, in pairs
/// (packed_matrix::panels16).
struct pair_kernels {
  const pair_tile_fn* tiles;
  int64_t max_rows;
};
/// AVX-512 BF16 (vdpbf16ps): packed_tiles_bf16.cpp.
pair_kernels avx512_bf16_pair_kernels();

/// One panel of an AMX GEMM: its pair rows (packed_matrix::panels16), bias (may be null),
/// width (1 to 16), where its output rows go (ldy apart), and the factor of each output
/// feature (null: none), which the sums meet before the bias (int8 codes' per-channel scales).
/// Or, instead of the pair rows, a per-channel int8 panel's codes (packed_matrix::panels8),
/// each exact in bf16 (at most 8 significant bits), which the tiles convert to pairs a step
/// at a time in L1 just before they read them (a whole panel converted ahead went through L2:
/// a 32-row batch took 1.8x as long). Either every panel of a call has codes or none has.
struct amx_panel {
  const uint32_t* w;
  const float* bias;
  int64_t cols;
  float* y;
  int64_t ldy;
  const float* scale = nullptr;
  const int8_t* codes = nullptr;
};
/// panel_of(i): panel i of the call's (0-based), y at its first output row. Asked for once
/// or twice a panel (whole 32-row blocks, then a shorter last one), for i and i + 1 (i even)
/// before either is multiplied.
using amx_panel_fn = std::function<amx_panel(int64_t panel)>;

/// pairs (depth / 2, 16) = float32 rows (depth, 16; 64-byte aligned) rounded to bf16 (to
/// nearest even), rows 2j and 2j + 1 of each feature side by side, 2j's in the low half: a
/// widened block of an int8 or int4 panel as the tiles' B operand. depth even.
void round_rows_to_bf16_pairs(const float* rows, int64_t depth, uint32_t* pairs);

/// y = x rows [0, n) @ `num_panels` bf16 panels over `pairs` pair rows (a multiple of 16:
/// in_features a multiple of 32) + bias, through the AMX tiles (cpu_runs(kernel_isa::amx)). Each
/// panel's y is written whole, not accumulated.
void amx_bf16_panels(const bf16_activations& x, int64_t n, int64_t pairs, int64_t num_panels,
                     const amx_panel_fn& panel_of);

}  // namespace actorllm::cpu::panels
