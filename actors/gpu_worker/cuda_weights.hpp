#pragma once
/// The views cuda::llama_runner takes of the host model: its config, pointers into the float32
/// weights, and pointers into one step's forward_batch. Plain C++ over the kernels' API, shared
/// by the worker's CUDA backend and kernels/cuda/standalone/cuda_golden; built only with CUDA.
#include "kernels/cuda/llama_runner.cuh"

namespace actorllm {

class llama_model;
struct llama_weights;
struct forward_batch;

/// The runner's config of `model`; the rotary table's rows bound the positions.
cuda::llama_runner_config runner_config_of(const llama_model& model);

/// Pointers into `weights` (null for an empty tensor: no bias, a tied LM head), valid while
/// the weights live; the runner copies them when constructed.
cuda::llama_host_weights host_weights_of(const llama_weights& weights);

/// Pointers into `batch`, which already has the runner's layout (finalized); valid while the
/// batch lives and is not changed.
cuda::llama_host_batch host_batch_of(const forward_batch& batch);

}  // namespace actorllm
