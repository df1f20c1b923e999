#pragma once
/// What the model keeps its projection matrices (and embedding table) as: the checkpoint's
/// float32 (a plain copy, with a packed copy for the CPU kernel beside it), or packed panels
/// that are the only copy: the checkpoint's own 16-bit values, another 16-bit type, or int8
/// quantized at load. Norms, biases and the rotary table stay float32 in every case.
#include <string>

#include "kernels/cpu/packed_linear.hpp"

namespace actorllm {

/// The user's choice, as the flags give it.
struct weight_options {
  /// --dtype: auto (the checkpoint's own, as vLLM) | float32 | float | float16 | half | bfloat16.
  std::string dtype = "auto";
  /// --quantization: none | int8 (per output channel, symmetric, at load).
  std::string quantization = "none";
};

/// What the model stores, and the startup log's words for it.
struct weight_choice {
  cpu::weight_format format = cpu::weight_format::f32;
  std::string description;  ///< e.g. "bfloat16 (the checkpoint's; --dtype auto)"
};

/// Chooses the storage for a checkpoint whose matrices are `checkpoint` (f32, f16 or bf16).
/// `why_float32_only`: empty when the model can keep packed weights alone; otherwise the
/// reason it cannot (experts, tensor parallelism, a CPU without AVX2), under which auto keeps
/// float32 and says why, while an explicit 16-bit dtype or int8 is refused naming the reason.
/// Throws std::runtime_error on an unknown dtype or quantization method, naming it.
weight_choice choose_weight_format(const weight_options& options, cpu::weight_format checkpoint,
                                   const std::string& why_float32_only);

/// Refuses a checkpoint quantized in a format this engine does not read (config.json's
/// quantization_config.quant_method), naming the method; a no-op for an empty method.
void check_checkpoint_quantization(const std::string& quant_method);

}  // namespace actorllm
