#pragma once
/// A linear layer's weights rearranged once for the CPU forward, and the GEMM that reads them.
///
/// OpenBLAS copies ("packs") the weight matrix into its own panel layout on every call. With
/// a prefill of hundreds of rows that copy is amortized; with a decode step of 32 rows it is a
/// third of the GEMM's time, because the weights are read once per step anyway. Here the
/// weights are packed once (llama_model does it on its first CPU forward), so a step streams
/// each weight once, straight into the FMAs.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/host_memory.hpp"

namespace actorllm::cpu {

/// w (out_features, in_features) as panels of `panel_width` output features: panel p holds
/// features [p * panel_width, (p + 1) * panel_width) as (in_features, panel_width), so one
/// input feature's weights for the whole panel are contiguous. The last panel is zero-padded.
struct packed_matrix {
  static constexpr int64_t panel_width = 16;
  int64_t out_features = 0;
  int64_t in_features = 0;
  std::vector<float, streamed_allocator<float>> panels;  // (num_panels, in_features, 16)

  int64_t num_panels() const { return (out_features + panel_width - 1) / panel_width; }
  bool empty() const { return out_features == 0; }
};

packed_matrix pack_matrix(const float* w, int64_t out_features, int64_t in_features);

/// y(n, out_features) = x(n, in_features) @ w^T + bias, as cpu::linear, on packed weights.
/// Panels are split across the calling thread's team. bias may be null.
void linear_packed(const float* x, const packed_matrix& w, const float* bias, int64_t n, float* y);

/// A run of consecutive output features written to a tensor of its own: (n, num_features).
struct output_slice {
  int64_t num_features;
  float* dst;
};

/// As linear_packed, with the output features cut into consecutive slices, each written to
/// its own tensor (q, k and v of a fused projection, with no copy afterwards). Every slice
/// but the last must be a multiple of panel_width wide; the widths sum to out_features.
void linear_packed_split(const float* x, const packed_matrix& w, const float* bias, int64_t n,
                         std::span<const output_slice> slices);

/// Whether this CPU runs the packed kernel (cpu_has_avx2(): AVX2, FMA and F16C). Elsewhere
/// linear_packed throws std::logic_error, and the model keeps to cpu::linear.
bool packed_linear_supported();

}  // namespace actorllm::cpu
