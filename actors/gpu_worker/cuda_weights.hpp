#pragma once
/// The views cuda::llama_runner takes of the host model: its config, pointers into the float32
/// weights, and pointers into one step's forward_batch. Plain C++ over the kernels' API, shared
/// by the worker's CUDA backend and kernels/cuda/standalone/cuda_golden; built only with CUDA.
#include <vector>

#include "kernels/cuda/llama_runner.cuh"

namespace actorllm {

class llama_model;
struct llama_weights;
struct forward_batch;

/// The runner's config of `model`: every family the CPU runs (dense, windowed, Gemma, MoE with
/// host routing); the rotary table's rows bound the positions. Throws std::runtime_error for a
/// local rotary table of another size than the global one.
cuda::llama_runner_config runner_config_of(const llama_model& model);

/// The runner's host weights of a model: pointers into its float32 weights (null for an
/// empty tensor: no bias, a tied LM head), and float32 copies of the matrices it keeps only as
/// packed 16-bit or int8 panels, unpacked here (exactly, for 16-bit) and freed with this.
/// Valid while the model lives; the runner copies them when constructed.
struct staged_host_weights {
  cuda::llama_host_weights view;
  std::vector<std::vector<float>> unpacked;
  operator const cuda::llama_host_weights&() const { return view; }  // NOLINT: as the view
};
staged_host_weights host_weights_of(const llama_model& model);

/// Pointers into `batch`, which already has the runner's layout (finalized); valid while the
/// batch lives and is not changed.
cuda::llama_host_batch host_batch_of(const forward_batch& batch);

}  // namespace actorllm
