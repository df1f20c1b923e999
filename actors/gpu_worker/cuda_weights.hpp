#pragma once
/// The views cuda::llama_runner takes of the host model: its config, its weights as the runner
/// uploads them, and pointers into one step's forward_batch. Plain C++ over the kernels' API,
/// shared by the worker's CUDA backend and tools/gpu_only/cuda_golden; built only with
/// CUDA.
#include <deque>
#include <optional>
#include <vector>

#include "kernels/cuda/llama_runner.cuh"
#include "kernels/cuda/quantized_linear.cuh"

namespace actorllm {

namespace cpu {
struct packed_matrix;
}  // namespace cpu

class llama_model;
struct llama_weights;
struct forward_batch;

/// The runner's config of `model`: every family the CPU runs (dense, windowed, Gemma, MoE with
/// host routing); the rotary table's rows bound the positions. Throws std::runtime_error for a
/// local rotary table of another size than the global one.
cuda::llama_runner_config runner_config_of(const llama_model& model);

/// A quantized matrix in the device's layout (cuda::quantized_matrix), owning its parts.
struct quantized_host_matrix {
  cuda::weight_code code = cuda::weight_code::q8;
  int64_t out_features = 0;
  int64_t in_features = 0;
  int64_t group_size = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  std::vector<uint8_t> zeros;        ///< q4 only
  std::vector<int32_t> input_order;  ///< empty: code column r is input feature r
  /// Host pointers into the parts; valid while this lives (a move keeps them).
  cuda::quantized_matrix view() const;
};

/// q8, fp8 and q4 panels in the device's layout: the same codes, scales (fp8's without the
/// packing's factor of 2^8) and zero points, row-major, and the same column order. Empty for
/// 16- and 32-bit panels, and for a layout the kernels cannot run (quantized_layout_error),
/// which the runner then takes unpacked, as a dense matrix.
std::optional<quantized_host_matrix> device_layout_of(const cpu::packed_matrix& panels);

/// The runner's host weights of a model: pointers into its float32 weights (null for an
/// empty tensor: no bias, a tied LM head); the projections it keeps only as quantized panels,
/// in the device's layout (they stay quantized on the device); and, for the other matrices it
/// keeps only as packed panels, tensors that unpack them when the runner uploads them: 16-bit
/// panels as their own 16-bit values (so a bf16 checkpoint reaches a bf16 device as its own
/// bits, with no float32 copy on the way), others (a quantized layout the kernels cannot run)
/// as float32. Valid while the model lives; the runner copies them when constructed.
struct staged_host_weights {
  cuda::llama_host_weights view;
  std::deque<quantized_host_matrix> quantized;
  operator const cuda::llama_host_weights&() const { return view; }  // NOLINT: as the view
};
staged_host_weights host_weights_of(const llama_model& model);

/// Pointers into `batch`, which already has the runner's layout (finalized); valid while the
/// batch lives and is not changed.
cuda::llama_host_batch host_batch_of(const forward_batch& batch);

}  // namespace actorllm
