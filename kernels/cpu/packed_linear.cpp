// The packed GEMM's driver: rows are taken in blocks that stay in L2 while every panel of the
// member's slice passes over them, each panel in depth blocks that stay in L1 while the row
// tiles of the block pass over them. The tiles themselves are packed_tiles_avx2.cpp's and
// packed_tiles_avx512.cpp's, chosen by what the CPU runs (kernel_isa.hpp).
#include "kernels/cpu/packed_linear.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/packed_tiles.hpp"
#include "kernels/cpu/thread_team.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu {

namespace {

using panels::block_groups;
using panels::tile_fn;
constexpr int64_t width = packed_matrix::panel_width;
/// Rows per block: 96 rows of 4096 floats are 1.5 MB, within L3 and mostly in L2 for the
/// usual widths; weights are read once per block, so large prefills read them a few times.
constexpr int64_t block_rows = 96;
using panels::block_depth;
/// Rows of a block up to which its row tiles ask for the next block of a float32 or 16-bit
/// panel, and the widener of an 8-bit one (next_block_share): decode
/// batches, whose weights each serve few rows. Measured (gemm_bench, 2 threads, interleaved
/// runs): float32 at 8 and 32 rows about 1.25x; at 128 rows and more no gain.
constexpr int64_t few_rows = 48;
/// Input features per depth block of the wide tiles: two panels' blocks (32 KB) and a tile's
/// x (up to 12 KB) within L1. A model's chain of float32 GEMMs from DRAM at 32 rows, two
/// threads: 33 ms against 38 at 128 and 512 (x then streams from L2), 34 with the whole depth.
constexpr int64_t wide_depth = 256;
/// Panels per unit of work handed to a member, about (chunks_for_team): 64 output features.
constexpr int64_t panels_per_chunk = 4;
/// The same for the integer path: 256 output features, so that each member
/// streams longer runs of codes. One stream of the 110M model, 2 threads, three rounds each,
/// alternated: int4 326 and 374 tok/s against 256 and 280 with 4 panels, int8 253 and 292
/// against 241 and 248.
constexpr int64_t integer_panels_per_chunk = 16;

}  // namespace

int64_t chunks_for_team(int64_t num_panels, int64_t per_chunk, int64_t team_size) {
  const int64_t chunks = (num_panels + per_chunk - 1) / per_chunk;
  const int64_t rounded = (chunks + team_size - 1) / team_size * team_size;
  return std::max<int64_t>(1, std::min(rounded, num_panels));
}

namespace {

/// The tiles reading `w`'s format in the chosen instruction set, the start of its panels and
/// the bytes of one panel row (one input feature's 16 weights).
struct panel_access {
  panels::tile_kernels kernels;
  const unsigned char* base;
  int64_t row_bytes;
};

panel_access access_of(const packed_matrix& w) {
  using F = weight_format;
  const panels::tile_kernels kernels = uses_avx512(kernel_isa_in_use())
                                           ? panels::avx512_tiles(w.format)
                                           : panels::avx2_tiles(w.format);
  switch (w.format) {
    case F::f16:
    case F::bf16:
      return {kernels, reinterpret_cast<const unsigned char*>(w.panels16.data()), 2 * width};
    case F::q8:
    case F::fp8:
      return {kernels, reinterpret_cast<const unsigned char*>(w.panels8.data()), width};
    case F::q4:
      return {kernels, w.panels4.data(), width / 2};
    case F::f32:
      break;
  }
  return {kernels, reinterpret_cast<const unsigned char*>(w.panels.data()), 4 * width};
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

/// Row tiles of nearly equal height in a block of rows (AVX2, 32 rows: 6 6 5 5 5 5, not
/// 6 6 6 6 6 2): a tile costs one pass over the panel whatever its height.
int64_t tiles_in_block(int64_t rows_in_block, int64_t max_rows) {
  return (rows_in_block + max_rows - 1) / max_rows;
}
int64_t tile_height(int64_t rows_in_block, int64_t num_tiles, int64_t i) {
  return rows_in_block / num_tiles + (i < rows_in_block % num_tiles);
}

/// x (n, in) as the float tiles read it (tile_fn): block by block of block_rows, tile by tile,
/// each tile's rows k-major, so that the tile of rows [r, r + h) starts at r * in.
void tile_rows_k_major(const float* x, int64_t n, int64_t in, int64_t max_rows,
                       std::vector<float>& out) {
  out.resize(n * in);
  float* tiles = out.data();
  // The team's members take disjoint ranges of input features in every tile (32 float32 rows
  // of a 32-stream step: 0.6 ms of the step on the leader alone); small x stays on the caller.
  constexpr int64_t serial_values = int64_t(1) << 14;
  parallel_for(in, 16, n * in < serial_values ? in : 0, [&](int64_t k0, int64_t k1) {
    for (int64_t r0 = 0; r0 < n; r0 += block_rows) {
      const int64_t rows_in_block = std::min(block_rows, n - r0);
      const int64_t num_tiles = tiles_in_block(rows_in_block, max_rows);
      for (int64_t i = 0, r = r0; i < num_tiles; ++i) {
        const int64_t rows = tile_height(rows_in_block, num_tiles, i);
        float* tile = tiles + r * in;
        for (int64_t k = k0; k < k1; ++k)
          for (int64_t j = 0; j < rows; ++j) tile[k * rows + j] = x[(r + j) * in + k];
        r += rows;
      }
    }
  });
}

/// The groups of panel p's depth block d (block_groups), with x's sums where q4's float tiles
/// need them.
block_groups groups_of(const packed_matrix& w, int64_t p, const depth_blocks::block& d,
                       const float* x_sums, int64_t ld_sums) {
  const int64_t at = (p * w.num_groups() + d.k0 / w.group_length()) * width;
  return {d.group,
          w.scales.empty() ? nullptr : w.scales.data() + at,
          w.half_scales.empty() ? nullptr : w.half_scales.data() + at,
          w.scale_unit,
          w.zeros.empty() ? nullptr : w.zeros.data() + at,
          w.common_zero,
          x_sums,
          ld_sums,
          {}};
}

/// Whether every slice but the last ends on a panel boundary (then panels write in place).
bool slices_on_panels(std::span<const output_slice> slices) {
  for (size_t i = 0; i + 1 < slices.size(); ++i)
    if (slices[i].num_features % width != 0) return false;
  return true;
}

/// Rows from which the amx set's tiles take int8 and int4 batches (fewer: the integer dot
/// products, which stream the codes as they are): 4 for per-channel int8, whose codes the
/// tiles convert as they go, 32 for the formats widened first. A model's chain of GEMMs from
/// DRAM, tiles against dot products: per-channel int8 at 3, 4, 8 and 16 rows 0.8x, 1.1x,
/// 1.3x and 1.8x; int4 at 16 rows 0.86x, at 24 rows 1.06x.
bool amx_takes_quantized(const packed_matrix& w, int64_t n) {
  const int64_t from_rows = w.per_channel_int8() ? 4 : 32;
  return (w.format == weight_format::q8 || w.format == weight_format::q4) && n >= from_rows &&
         w.in_features % 32 == 0 && w.group_length() % 2 == 0;
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
  // int8 and int4 weights where the set rounds activations: x quantized once, then integer
  // dot products per panel, four rows at a time (packed_dot_vnni.cpp, packed_dot_avx2.cpp),
  // instead of the float tiles: prefills as well as decode batches, as llama.cpp's Q8_0 and
  // Q4_0 do.
  thread_local panels::int8_activations x_codes;
  const panels::int8_activations* x_int8 = nullptr;
  const kernel_isa isa = kernel_isa_in_use();
  const panels::integer_dot_fn integer_dot =
      uses_avx512(isa) ? panels::integer_dot_panel_vnni : panels::integer_dot_panel_avx2;
  const panel_access access = access_of(w);
  // The amx set's tiles take int8 and int4 batches of 4 or 32 rows or more instead
  // (amx_takes_quantized): x rounded to bf16 (as vLLM's W8A16 and W4A16 kernels keep x in 16
  // bits), the panels converted to bf16 pairs (run_panels).
  const bool amx_quantized =
      isa == kernel_isa::amx && amx_takes_quantized(w, n) && access.kernels.widen != nullptr;
  if (rounds_activations(isa) && panels::integer_dot_applies(w, n) && !amx_quantized) {
    panels::quantize_activations(x, n, in, x_codes);
    x_int8 = &x_codes;
  }
  const depth_blocks blocks = depth_blocks_of(w);
  // bf16 weights where the set multiplies bf16 pairs, in batches of more than one row: x
  // rounded to bf16 once, the panels read as they are packed, in pairs (packed_tiles_bf16.cpp).
  // One row streams the weights through the float32 tiles, x exact, at the memory's pace.
  thread_local panels::bf16_activations x_bf16_rows;
  const panels::bf16_activations* x_bf16 = nullptr;
  const panels::pair_kernels pairs = rounds_activations_to_bf16(isa)
                                         ? panels::avx512_bf16_pair_kernels()
                                         : panels::pair_kernels{nullptr, 0};
  if ((pairs.tiles && w.format == weight_format::bf16 && in % 2 == 0 && n > 1) || amx_quantized) {
    panels::round_activations_to_bf16(x, n, in, x_bf16_rows);
    x_bf16 = &x_bf16_rows;
  }
  // The amx set multiplies the same bf16 x in the tiles, 32 input features a step.
  const bool amx_tiles = x_bf16 && isa == kernel_isa::amx && in % 32 == 0;
  // q4: each row's sum of x over each segment, for the zero points' share (block_groups).
  // (Read through a pointer: the team's other threads see their own thread_locals.)
  thread_local std::vector<float> x_sum_buffer;
  const float* x_sums = nullptr;
  if (w.format == weight_format::q4 && !x_int8 && !amx_tiles) {
    const int64_t num_segments = blocks.num_segments;
    x_sum_buffer.assign(n * num_segments, 0.0f);
    for (const auto& b : blocks.list)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = b.k0; k < b.k0 + b.depth; ++k)
          x_sum_buffer[i * num_segments + b.first_segment + (k - b.k0) / b.group] += x[i * in + k];
    x_sums = x_sum_buffer.data();
  }
  // The float tiles read x k-major, tile by tile (tile_fn).
  thread_local std::vector<float> x_tiles_buffer;
  const float* x_tiles = x;
  // (One row streams each panel through the one-row tile, x as it is.)
  const bool float_tiles = !x_int8 && !x_bf16 && n > 1;
  // Float32 panels two at a time where the set has wide tiles.
  const bool wide = float_tiles && access.kernels.wide_tiles;
  const int64_t max_tile_rows = wide ? access.kernels.wide_max_rows : access.kernels.max_rows;
  if (float_tiles) {
    tile_rows_k_major(x, n, in, max_tile_rows, x_tiles_buffer);
    x_tiles = x_tiles_buffer.data();
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
  // Panels p and p + 1 over the row block of rows_in_block rows from r0, wide_depth input
  // features a block (two panels' blocks and a tile's x within L1). With next_block_ahead
  // the row tiles ask for both panels' next blocks, each its share.
  auto run_two_panels = [&](int64_t p, int64_t r0, int64_t rows_in_block, int64_t num_tiles,
                            bool next_block_ahead) {
    const float* panel[2] = {w.panels.data() + p * in * width,
                             w.panels.data() + (p + 1) * in * width};
    target t[2];
    panels::two_panels pair{};
    for (int j = 0; j < 2; ++j) {
      const int64_t col0 = (p + j) * width;
      t[j] = target_of(col0);
      pair.cols[j] = std::min(width, out - col0);
      pair.ldy[j] = t[j].ld;
    }
    for (int64_t k0 = 0; k0 < in; k0 += wide_depth) {
      const int64_t depth = std::min(wide_depth, in - k0);
      const bool last_block = k0 + depth == in;
      for (int j = 0; j < 2; ++j) {
        pair.w[j] = panel[j] + k0 * width;
        // Past a panel's last block, the next pair's (the panel two on, as they lie).
        pair.next[j] = last_block ? panel[j] + 2 * in * width : panel[j] + (k0 + depth) * width;
        pair.bias[j] = bias && last_block ? bias + (p + j) * width : nullptr;
      }
      for (int64_t i = 0, r = 0; i < num_tiles; ++i) {
        const int64_t rows = tile_height(rows_in_block, num_tiles, i);
        for (int j = 0; j < 2; ++j) pair.y[j] = t[j].dst + (r0 + r) * t[j].ld;
        access.kernels.wide_tiles[rows](x_tiles + (r0 + r) * in + k0 * rows, depth, pair,
                                        next_block_ahead
                                            ? panels::next_block_share_of(i, num_tiles, depth)
                                            : panels::next_block_share{},
                                        k0 > 0);
        r += rows;
      }
    }
  };
  auto run_panels = [&](int64_t first, int64_t last) {
    if (amx_tiles) {
      // Per-channel int8: the codes themselves are the B operand (exact in bf16), each output
      // feature's scale meeting its sums once (more exact than widening them, and converted in
      // L1 as the tiles go). The other quantized panels: widened block by block, then rounded
      // to pairs, into one of two scratch panels (the tiles take panels i and i + 1, i even),
      // once per GEMM, whatever the rows (widening as the tiles go, again for every 32-row
      // block, took int4 at 128 rows 1.7x as long).
      thread_local std::vector<uint32_t> scratch[2];
      alignas(64) float widened[block_depth * width];
      panels::amx_bf16_panels(*x_bf16, n, in / 2, last - first, [&](int64_t i) {
        const int64_t p = first + i, col0 = p * width;
        const target t = target_of(col0);
        panels::amx_panel panel{nullptr, bias ? bias + col0 : nullptr, std::min(width, out - col0),
                                t.dst, t.ld};
        if (!amx_quantized) {
          panel.w =
              reinterpret_cast<const uint32_t*>(w.panels16.data()) + p * w.panel_rows() / 2 * width;
        } else if (w.per_channel_int8()) {
          panel.codes = w.panels8.data() + p * in * width;
          panel.scale = w.scales.data() + p * width;
        } else {
          std::vector<uint32_t>& paired = scratch[i % 2];
          paired.resize(in / 2 * width);
          const unsigned char* weights = access.base + p * w.panel_rows() * access.row_bytes;
          for (const auto& d : blocks.list) {
            const block_groups groups = groups_of(w, p, d, nullptr, 0);
            access.kernels.widen(weights + d.k0 * access.row_bytes, groups, d.depth, widened);
            panels::round_rows_to_bf16_pairs(widened, d.depth, paired.data() + d.k0 / 2 * width);
          }
          panel.w = paired.data();
        }
        return panel;
      });
      return;
    }
    if (x_int8) {
      for (int64_t p = first; p < last; ++p) {
        const int64_t col0 = p * width;
        const target t = target_of(col0);
        for (int64_t r0 = 0; r0 < n; r0 += panels::int8_activations::max_rows) {
          const int64_t rows = std::min(panels::int8_activations::max_rows, n - r0);
          integer_dot(panels::activation_rows(*x_int8, in, r0, rows), w, p,
                      bias ? bias + col0 : nullptr, std::min(width, out - col0), t.dst + r0 * t.ld,
                      t.ld);
        }
      }
      return;
    }
    alignas(64) float widened[block_depth * width];  // one block of a 16-bit or int8 panel
    for (int64_t r0 = 0; r0 < n; r0 += block_rows) {
      const int64_t rows_in_block = std::min(block_rows, n - r0);
      const int64_t num_tiles = tiles_in_block(rows_in_block, max_tile_rows);
      // Decode-sized blocks of 16-bit panels: the tiles read the panel itself, converting as
      // they go, instead of a widened copy (bf16 at 8 and 32 rows: about 1.1x).
      const bool decode_sized = rows_in_block <= few_rows;
      const bool sixteen_bit = w.format == weight_format::bf16 || w.format == weight_format::f16;
      const bool reads_panel_itself = decode_sized && sixteen_bit;
      const bool next_block_ahead = decode_sized && (w.format == weight_format::f32 || sixteen_bit);
      int64_t p = first;
      if (wide)
        for (; p + 1 < last; p += 2)
          run_two_panels(p, r0, rows_in_block, num_tiles, next_block_ahead);
      for (; p < last; ++p) {
        const unsigned char* panel = access.base + p * w.panel_rows() * access.row_bytes;
        const int64_t col0 = p * width, cols = std::min(width, out - col0);
        const float* b = bias ? bias + col0 : nullptr;
        const target t = target_of(col0);
        float* y = t.dst + r0 * t.ld;
        for (const auto& d : blocks.list) {
          const int64_t k0 = d.k0, depth = d.depth;
          const bool last_block = k0 + depth == in;
          const void* block = panel + k0 * access.row_bytes;
          const block_groups groups =
              groups_of(w, p, d, x_sums ? x_sums + d.first_segment : nullptr, blocks.num_segments);
          if (x_bf16) {
            // The panel is in pairs already (packed_matrix::panels16): the tiles read it.
            const auto* paired = static_cast<const uint32_t*>(block);
            const int64_t ldx = x_bf16->pairs_per_row;
            const int64_t pair_tiles = tiles_in_block(rows_in_block, pairs.max_rows);
            for (int64_t i = 0, r = 0; i < pair_tiles; ++i) {
              const int64_t rows = tile_height(rows_in_block, pair_tiles, i);
              pairs.tiles[rows](x_bf16->pairs + (r0 + r) * ldx + k0 / 2, ldx, depth / 2, paired,
                                next_block_ahead
                                    ? panels::next_block_share_of(i, pair_tiles, depth / 2)
                                    : panels::next_block_share{},
                                last_block ? b : nullptr, cols, k0 > 0, y + r * t.ld, t.ld);
              r += rows;
            }
            continue;
          }
          const tile_fn* tiles = access.kernels.tiles;
          if (access.kernels.widen && num_tiles > 1 && !reads_panel_itself) {
            // Decode-sized (8-bit panels off the integer path; 16-bit ones read the panel
            // itself above): the widener asks for the next block while it reads this one
            // (gemm_bench, int8 at 32 rows under avx512 and avx2: about 1.04x; int4 even).
            block_groups widen_groups = groups;
            if (rows_in_block <= few_rows) widen_groups.next_block = {true, 0, 0};
            access.kernels.widen(block, widen_groups, depth, widened);
            block = widened;
            tiles = access.kernels.f32_tiles;
          }
          int64_t r = 0;
          for (int64_t i = 0; i < num_tiles; ++i) {
            const int64_t rows = tile_height(rows_in_block, num_tiles, i);
            block_groups tile_groups = groups;
            // The row tiles ask for the next block, each its share.
            if (next_block_ahead)
              tile_groups.next_block = panels::next_block_share_of(i, num_tiles, depth);
            if (groups.x_sums) tile_groups.x_sums += (r0 + r) * blocks.num_segments;
            tiles[rows](x_tiles + (r0 + r) * in + k0 * rows, depth, block, tile_groups,
                        last_block ? b : nullptr, cols, k0 > 0, y + r * t.ld, t.ld);
            r += rows;
          }
        }
      }
    }
  };
  if (n * in * out < min_parallel_macs) return run_panels(0, w.num_panels());
  // Panels are handed out a few at a time rather than split in halves up front, so that a
  // member that was preempted, or whose weights came slower from memory, takes fewer; each
  // member first from a contiguous share of its own, so that its panels, which lie end to end,
  // make one stream that the prefetchers follow from chunk to chunk (parallel_for_stealing).
  const int64_t per_chunk = x_int8 || amx_tiles ? integer_panels_per_chunk : panels_per_chunk;
  const int64_t num_chunks = chunks_for_team(w.num_panels(), per_chunk, this_thread_team().size());
  parallel_for_stealing(num_chunks, 1, [&](int, int64_t c) {
    run_panels(c * w.num_panels() / num_chunks, (c + 1) * w.num_panels() / num_chunks);
  });
}

void linear_packed(const float* x, const packed_matrix& w, const float* bias, int64_t n, float* y) {
  const output_slice whole{w.out_features, y};
  linear_packed_split(x, w, bias, n, {&whole, 1});
}

}  // namespace actorllm::cpu
