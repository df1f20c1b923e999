#pragma once
/// A linear layer's weights rearranged once for the CPU forward, and the GEMM that reads them.
///
/// OpenBLAS copies ("packs") the weight matrix into its own panel layout on every call. With
/// a prefill of hundreds of rows that copy is amortized; with a decode step of 32 rows it is a
/// third of the GEMM's time, because the weights are read once per step anyway. Here the
/// weights are packed once, so a step streams each weight once, straight into the FMAs.
///
/// Panels hold float32, the checkpoint's own 16-bit values (f16, bf16: widened in registers,
/// exactly), or int8 with one scale per output feature (q8); the kernel reads each format
/// directly and accumulates in float32. Packing, unpacking and quantization are
/// packed_matrix.cpp; the kernel is packed_linear.cpp.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/host_memory.hpp"

namespace actorllm::cpu {

/// How a packed matrix (or a source of one) stores its weights.
enum class weight_format {
  f32,
  f16,   ///< IEEE binary16
  bf16,  ///< bfloat16: the top half of a float32
  q8,    ///< int8, w = q * scale of the output feature (symmetric, per output feature)
  fp8,   ///< float8 E4M3FN codes as shipped, w = e4m3 * scale of the output feature
};
const char* to_string(weight_format format);
/// Bytes per weight, the scales of q8 aside.
int64_t element_size(weight_format format);

/// w (out_features, in_features) as panels of `panel_width` output features: panel p holds
/// features [p * panel_width, (p + 1) * panel_width) as (in_features, panel_width), so one
/// input feature's weights for the whole panel are contiguous. The last panel is zero-padded.
/// Exactly one of the panel vectors is filled, the one of `format`.
struct packed_matrix {
  static constexpr int64_t panel_width = 16;
  weight_format format = weight_format::f32;
  int64_t out_features = 0;
  int64_t in_features = 0;
  std::vector<float, streamed_allocator<float>> panels;          // f32: (num_panels, in, 16)
  std::vector<uint16_t, streamed_allocator<uint16_t>> panels16;  // f16, bf16: the same
  std::vector<int8_t, streamed_allocator<int8_t>> panels8;       // q8, fp8: the same
  /// q8, fp8: (num_panels * 16), per output feature; 0 past out_features. fp8 keeps 256 times
  /// the checkpoint's scale: its codes are widened through float16, which reads them 2^8
  /// smaller (exactly), so that q * scale is the same product.
  std::vector<float> scales;

  int64_t num_panels() const { return (out_features + panel_width - 1) / panel_width; }
  bool empty() const { return out_features == 0; }
  /// Bytes the panels (and scales) take.
  int64_t bytes() const;
};

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
/// in [-127, 127]; a row of zeros gets scale 0. fp8 is packed from fp8 rows only (codes and
/// scales as they are). Needs packed_linear_supported() for f16 and fp8.
packed_matrix pack_matrix(std::span<const matrix_rows> parts, int64_t in_features,
                          weight_format format);

/// The weights as float32 (out_features, in_features): what the kernel multiplies by, so
/// exact for f32, f16 and bf16, and q * scale (one float32 product) for q8 (the kernel
/// multiplies the sum over k by the scale, which equals it up to rounding).
std::vector<float> unpack_matrix(const packed_matrix& w);

/// out(n, in_features) = rows ids[0..n) of w, as unpack_matrix gives them: the embedding
/// gather where a packed matrix is the table's only copy. Each id must be < out_features.
void gather_rows(const packed_matrix& w, const int32_t* ids, int64_t n, float* out);

/// y(n, out_features) = x(n, in_features) @ w^T + bias, as cpu::linear, on packed weights.
/// Panels are split across the calling thread's team. bias may be null.
void linear_packed(const float* x, const packed_matrix& w, const float* bias, int64_t n, float* y);

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
