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

/// How a checkpoint ships its projections (config.json's quantization_config).
enum class checkpoint_quantization {
  none,
  /// float8 E4M3FN weights with a weight_scale per output channel or per tensor:
  /// compressed-tensors' float-quantized 8-bit weights, or quant_method fp8 without blocks.
  fp8,
};

/// What the model stores, and the startup log's words for it.
struct weight_choice {
  /// Of the embedding table and LM head, and of the projections unless float8_projections.
  cpu::weight_format format = cpu::weight_format::f32;
  std::string description;          ///< e.g. "bfloat16 (the checkpoint's bfloat16; --dtype auto)"
  bool float8_projections = false;  ///< the projections stay float8 as shipped
  /// Whether packed panels are the only copy of the matrices.
  bool packed_only() const { return format != cpu::weight_format::f32 || float8_projections; }
};

/// Chooses the storage for a checkpoint whose matrices are `checkpoint` (f32, f16 or bf16).
/// `why_float32_only`: empty when the model can keep packed weights alone; otherwise the
/// reason it cannot (experts, tensor parallelism, a CPU without AVX2), under which auto keeps
/// float32 and says why, while an explicit 16-bit dtype or int8 is refused naming the reason.
/// Throws std::runtime_error on an unknown dtype or quantization method, naming it.
/// A float8 checkpoint keeps its projections float8 (the rest as above); it refuses int8 and
/// any reason for float32.
weight_choice choose_weight_format(
    const weight_options& options, cpu::weight_format checkpoint,
    const std::string& why_float32_only,
    checkpoint_quantization quantized = checkpoint_quantization::none);

/// Reads config.json's quantization_config (`config_json`, its JSON text; empty: none).
/// Throws std::runtime_error naming the method (and the part of it) this engine does not read:
/// GPTQ, AWQ, int-quantized or pack-quantized compressed-tensors, block-wise fp8, ...
checkpoint_quantization read_checkpoint_quantization(const std::string& config_json);

}  // namespace actorllm
