#pragma once
/// A linear layer's weights rearranged once for the CPU forward, and the GEMM that reads them.
///
/// OpenBLAS copies ("packs") the weight matrix into its own panel layout on every call. With
/// a prefill of hundreds of rows that copy is amortized; with a decode step of 32 rows it is a
/// third of the GEMM's time, because the weights are read once per step anyway. Here the
/// weights are packed once, so a step streams each weight once, straight into the FMAs.
///
/// Panels hold float32, the checkpoint's own 16-bit values (f16, bf16: widened in registers,
/// exactly), int8 with one scale per output feature or per group of input features (q8), or
/// 4-bit codes with a scale and zero point per group (q4); the kernel reads each format
/// directly and accumulates in float32. Packing, unpacking and quantization are
/// packed_matrix.cpp (grouped integer sources: packed_quantized.cpp); the kernel is
/// packed_linear.cpp.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/host_memory.hpp"
#include "kernels/cpu/kernel_isa.hpp"

namespace actorllm::cpu {

/// How a packed matrix (or a source of one) stores its weights.
enum class weight_format {
  f32,
  f16,   ///< IEEE binary16
  bf16,  ///< bfloat16: the top half of a float32
  q8,    ///< int8, w = q * scale of the output feature, or of its group of input features
  fp8,   ///< float8 E4M3FN codes as shipped, w = e4m3 * scale of the output feature
  q4,    ///< 4-bit codes 0..15, w = (code - zero) * scale of the group (GPTQ, AWQ, Q4_0)
};
const char* to_string(weight_format format);
/// Bytes per weight of a packing source (f32, f16, bf16, fp8), the scales aside.
int64_t element_size(weight_format format);

/// w (out_features, in_features) as panels of `panel_width` output features: panel p holds
/// features [p * panel_width, (p + 1) * panel_width) as (in_features, panel_width), so one
/// input feature's weights for the whole panel are contiguous. The last panel is zero-padded.
/// Exactly one of the panel vectors is filled, the one of `format`.
///
/// Grouped formats (q4, and q8 from a grouped checkpoint) keep one scale (q4: and zero point)
/// per output feature and group of `group_size` consecutive panel rows. A checkpoint whose
/// groups are scattered over the input features (GPTQ's desc_act) is packed with its input
/// features reordered so that each group is contiguous: panel row j then holds input feature
/// input_order[j], and the kernel reads x in that order.
struct packed_matrix {
  static constexpr int64_t panel_width = 16;
  weight_format format = weight_format::f32;
  int64_t out_features = 0;
  int64_t in_features = 0;
  std::vector<float, streamed_allocator<float>> panels;  // f32: (num_panels, in, 16)
  /// f16: (num_panels, in, 16). bf16: (num_panels, panel_rows(), 16) in pairs of input
  /// features, the operand layout of vdpbf16ps: pair row j holds, for each feature f, input
  /// features 2j and 2j + 1 side by side (2j's in the low half), so that one 64-byte line
  /// gives two panel rows to the float tiles and one pair row to the bf16 dot products
  /// without a pass that pairs them (offset16 says where each weight sits). An odd in_features
  /// leaves the last pair's high halves zero.
  std::vector<uint16_t, streamed_allocator<uint16_t>> panels16;
  std::vector<int8_t, streamed_allocator<int8_t>> panels8;  // q8, fp8: the same
  /// q4: (num_panels, in, 8) bytes; byte j of a row holds feature j in its low nibble and
  /// feature j + 8 in its high one.
  std::vector<uint8_t, streamed_allocator<uint8_t>> panels4;
  /// q8, fp8: (num_panels, num_groups, 16), per output feature and group; 0 past
  /// out_features. fp8 keeps 256 times the checkpoint's scale: its codes are widened through
  /// float16, which reads them 2^8 smaller (exactly), so that q * scale is the same product.
  std::vector<float> scales;
  /// q4: the same, as float16 bits of scale / scale_unit (q4_scale() reads one back). A
  /// 4-bit group's scale in 16 bits, as Q4_0's, GPTQ's and AWQ's: 4.5 bits a weight where
  /// float32 scales and a zero point a group took 5.25, and a single stream reads the weights
  /// at the memory's pace.
  std::vector<uint16_t> half_scales;
  /// q4: a power of two that puts the largest |scale| in [2^14, 2^15), float16's normal
  /// range: a float16 or bfloat16 scale is then kept exactly (unless the matrix's scales span
  /// more than 2^28), a float32 one rounded to 11 significant bits.
  float scale_unit = 1.0f;
  /// q4: (num_panels, num_groups, 16), the code that reads as 0; empty where every group's is
  /// common_zero (Q4_0's 8, symmetric GPTQ's 8).
  std::vector<uint8_t> zeros;
  uint8_t common_zero = 0;
  /// Panel rows per scale; 0: one group of all in_features (per output feature).
  int64_t group_size = 0;
  /// Empty, or the input feature of each panel row (a permutation of [0, in_features)).
  std::vector<int32_t> input_order;

  int64_t num_panels() const { return (out_features + panel_width - 1) / panel_width; }
  /// Rows of each panel: in_features, rounded up to a whole pair for bf16.
  int64_t panel_rows() const {
    return format == weight_format::bf16 ? in_features + (in_features & 1) : in_features;
  }
  int64_t group_length() const { return group_size > 0 ? group_size : in_features; }
  int64_t num_groups() const { return in_features == 0 ? 1 : in_features / group_length(); }
  /// int8 with one scale per output feature: the amx set multiplies its codes as they are.
  bool per_channel_int8() const { return format == weight_format::q8 && num_groups() == 1; }
  bool empty() const { return out_features == 0; }
  /// Bytes the panels (and scales) take.
  int64_t bytes() const;
  /// q4: the scale and zero point at index i of scales' layout (num_panels, num_groups, 16).
  float q4_scale(int64_t i) const;
  int q4_zero(int64_t i) const { return zeros.empty() ? common_zero : zeros[i]; }
};

/// Where the weight of panel row k (an input feature) and lane `lane` (an output feature)
/// of a 16-bit panel sits, in elements from the panel's start (packed_matrix::panels16).
constexpr int64_t offset16(weight_format format, int64_t k, int64_t lane) {
  constexpr int64_t width = packed_matrix::panel_width;
  return format == weight_format::bf16 ? (k & ~int64_t(1)) * width + 2 * lane + (k & 1)
                                       : k * width + lane;
}

packed_matrix pack_matrix(const float* w, int64_t out_features, int64_t in_features);

/// Consecutive rows of a source matrix, row-major, stored as `format` (f32, f16, bf16 or
/// fp8; a 16-bit source may sit at any address, as tensors in a mapped checkpoint do).
struct matrix_rows {
  const void* data;
  weight_format format;
  int64_t num_rows;
  const float* row_scales = nullptr;  ///< fp8: one scale per row (w = e4m3 * scale)
};

/// Packs the rows of `parts`, stacked in order (q, k and v into one fused projection), as
/// `format`. A 16-bit source kept in its own format is copied bit for bit; float32 to f16 or
/// bf16 rounds to nearest even. q8 quantizes each output feature o on its own:
/// scale_o = max_k |w[o][k]| / 127, q[o][k] = round(w[o][k] / scale_o) (halves away from zero),
/// in [-127, 127]; a row of zeros gets scale 0. q4 quantizes as llama.cpp's Q4_0, per group of
/// q4_group_size input features: m = the group's weight of largest magnitude (the first such),
/// scale = m / -8, code = min(15, floor(w / scale + 8.5)), zero 8, the scale then kept in
/// float16 as Q4_0's is; a group of zeros gets scale 0 (in_features must be a multiple of
/// q4_group_size). fp8 is packed from fp8 rows only
/// (codes and scales as they are). Needs packed_linear_supported() for f16 and fp8.
packed_matrix pack_matrix(std::span<const matrix_rows> parts, int64_t in_features,
                          weight_format format);

/// The group of --quantization int4 (Q4_0's block).
constexpr int64_t q4_group_size = 32;

/// Rows of a matrix quantized per group of input features, decoded from a checkpoint's
/// packing: w[o][k] = (codes[o][k] - zeros[o][g]) * scales[o][g], where g is k's group.
struct quantized_rows {
  const uint8_t* codes;  ///< (num_rows, in_features), each below 2^bits
  const float* scales;   ///< (num_rows, num_groups)
  const uint8_t* zeros;  ///< (num_rows, num_groups)
  int64_t num_rows;
};

/// How the groups of quantized_rows lie over the input features.
struct quantized_layout {
  int bits;            ///< 4 (packed as q4) or 8 (q8: code - zero must lie in [-128, 127])
  int64_t group_size;  ///< input features per group; in_features for one group per row
  /// Empty: group g is input features [g * group_size, (g + 1) * group_size). Otherwise a
  /// permutation of the input features such that input_order[j] is in group j / group_size
  /// (GPTQ's g_idx sorted), which becomes the packed matrix's input_order.
  std::span<const int32_t> input_order;
};

/// Packs grouped integer rows, stacked in order, as q4 or q8, keeping every code and zero
/// point as given, and every scale (q4: within float16's precision, packed_matrix::
/// half_scales; exactly for float16 and bfloat16 scales), so that unpack_matrix reads back
/// (code - zero) * scale. Throws
/// std::invalid_argument on a bit width other than 4 or 8, a group size that does not divide
/// in_features, or (8 bits) a code - zero outside int8.
packed_matrix pack_quantized(std::span<const quantized_rows> parts, int64_t in_features,
                             const quantized_layout& layout);

/// The weights as float32 (out_features, in_features), in the input features' own order:
/// what the kernel multiplies by, so exact for f32, f16 and bf16, q * scale (one float32
/// product) for q8 and fp8, and float(code - zero) * scale for q4 (the kernel multiplies each
/// group's sum by its scale, which equals it up to rounding).
std::vector<float> unpack_matrix(const packed_matrix& w);

/// The weights of 16-bit panels (f16, bf16) in their own type, row-major (out_features,
/// in_features) into `out`: the stored bits, not widened, so a device of the same type
/// receives exactly what the checkpoint holds. Throws std::invalid_argument for another format.
void unpack_matrix_bits16(const packed_matrix& w, uint16_t* out);

/// out(n, in_features) = rows ids[0..n) of w, as unpack_matrix gives them: the embedding
/// gather where a packed matrix is the table's only copy. Each id must be < out_features.
void gather_rows(const packed_matrix& w, const int32_t* ids, int64_t n, float* out);

/// y(n, out_features) = x(n, in_features) @ w^T + bias, as cpu::linear, on packed weights.
/// Panels are split across the calling thread's team. bias may be null.
void linear_packed(const float* x, const packed_matrix& w, const float* bias, int64_t n, float* y);

/// How many chunks the packed GEMM hands `num_panels` panels out in, about per_chunk panels
/// each (chunk c: panels [c * num_panels / chunks, (c + 1) * num_panels / chunks)): a
/// multiple of the team's size where there are panels enough, so that the members take
/// equal shares. Three chunks of 16 int8 panels (a 768-wide projection) kept one of two
/// members waiting a third of the GEMM.
int64_t chunks_for_team(int64_t num_panels, int64_t per_chunk, int64_t team_size);

/// A run of consecutive output features written to a tensor of its own: (n, num_features).
struct output_slice {
  int64_t num_features;
  float* dst;
};

/// As linear_packed, with the output features cut into consecutive slices, each written to
/// its own tensor (q, k and v of a fused projection, with no copy afterwards when every slice
/// but the last is a multiple of panel_width wide; otherwise through one temporary). The
/// widths sum to out_features.
void linear_packed_split(const float* x, const packed_matrix& w, const float* bias, int64_t n,
                         std::span<const output_slice> slices);

/// Whether this CPU runs the packed kernel (cpu_has_avx2(): AVX2, FMA and F16C). Elsewhere
/// linear_packed throws std::logic_error, and the model keeps to cpu::linear.
bool packed_linear_supported();

}  // namespace actorllm::cpu
