#pragma once
/// The projections of GPTQ, AWQ and compressed-tensors pack-quantized checkpoints, decoded from
/// their int32 packing into one code per weight with its group's scale and zero point (the
/// form cpu::pack_quantized packs), after checking every tensor's dtype and shape against the
/// quantization_config and the projection's shape: a file that disagrees is a clear error,
/// never a read past a tensor.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/host_memory.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "model/safetensors.hpp"
#include "model/weight_options.hpp"

namespace actorllm {

/// One projection decoded: w[o][k] = (codes[o][k] - zeros[o][g]) * scales[o][g].
struct decoded_projection {
  int64_t rows = 0, cols = 0;
  cpu::scratch_vector<uint8_t> codes;  // (rows, cols): gone once packed
  std::vector<float> scales;           // (rows, num_groups)
  std::vector<uint8_t> zeros;          // (rows, num_groups)
  int64_t group_size = 0;              // cols where there is one group per row
  /// Empty when group g is the input features [g * group_size, (g + 1) * group_size); else
  /// the input features sorted by group (GPTQ's g_idx), see cpu::quantized_layout.
  std::vector<int32_t> input_order;

  cpu::quantized_rows rows_view() const {
    return {codes.data(), scales.data(), zeros.data(), rows};
  }
};

/// Whether the checkpoint holds projection `prefix` (e.g. "model.layers.0.mlp.down_proj")
/// in the integer layout of `q` (its qweight or weight_packed tensor).
bool has_quantized_projection(const tensor_store& store, const checkpoint_quantization& q,
                              const std::string& prefix);

/// Decodes projection `prefix` of shape (rows, cols) as `q` lays it out. Throws
/// std::runtime_error naming the tensor on a missing tensor, a wrong dtype or shape, a
/// group size that does not divide cols, a g_idx out of range or with groups of unequal
/// size, or (8 bits) a zero point outside what int8 codes can hold.
decoded_projection decode_projection(const tensor_store& store, const checkpoint_quantization& q,
                                     const std::string& prefix, int64_t rows, int64_t cols);

}  // namespace actorllm
