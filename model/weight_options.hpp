#pragma once
/// What the model keeps its projection matrices (and embedding table) as: packed panels that
/// are the only copy (float32, the checkpoint's own 16-bit values, another 16-bit type, int8 or
/// int4 quantized at load, or the projections of a quantized checkpoint as shipped: float8,
/// GPTQ, AWQ, compressed-tensors), or, where a model needs them (why_float32_only), float32
/// rows with a packed copy for the CPU kernel beside them. Norms, biases and the rotary table
/// stay float32 in every case.
#include <cstdint>
#include <string>

#include "kernels/cpu/packed_linear.hpp"

namespace actorllm {

/// The user's choice, as the flags give it.
struct weight_options {
  /// --dtype: auto (the checkpoint's own, as vLLM) | float32 | float | float16 | half | bfloat16.
  std::string dtype = "auto";
  /// --quantization: none | int8 (per output channel, symmetric, at load) | int4 (Q4_0: a
  /// scale per 32 input features, at load).
  std::string quantization = "none";
};

/// How a checkpoint ships its projections (config.json's quantization_config).
struct checkpoint_quantization {
  enum class method {
    none,
    /// float8 E4M3FN weights with a weight_scale per output channel or per tensor:
    /// compressed-tensors' float-quantized 8-bit weights, or quant_method fp8 without blocks.
    fp8,
    /// GPTQ in AutoGPTQ's format: qweight (int32, packed along the input features), qzeros
    /// (the zero point minus 1, packed along the output features), scales, g_idx; symmetric.
    gptq,
    /// AWQ's GEMM layout: qweight and qzeros packed along the output features, nibbles in the
    /// order 0 2 4 6 1 3 5 7; scales; zero points per group.
    awq,
    /// compressed-tensors pack-quantized, symmetric, weights only (W4A16, W8A16):
    /// weight_packed (codes + 2^(bits-1), packed along the input features), weight_scale,
    /// weight_shape.
    pack_quantized,
  };
  method kind = method::none;
  int bits = 0;            ///< integer methods: 4 or 8
  int64_t group_size = 0;  ///< integer methods: input features per scale; -1: per output channel
  bool desc_act = false;   ///< GPTQ: groups scattered over the input features, as g_idx says

  /// Whether the projections are integer codes (GPTQ, AWQ, pack-quantized).
  bool integer() const {
    return kind == method::gptq || kind == method::awq || kind == method::pack_quantized;
  }
  /// For the startup log, e.g. "GPTQ 4-bit, groups of 128, desc_act".
  std::string description() const;
};

/// What the model stores, and the startup log's words for it.
struct weight_choice {
  /// Of the embedding table and LM head, and of the projections unless projections_as_shipped.
  cpu::weight_format format = cpu::weight_format::f32;
  std::string description;  ///< e.g. "bfloat16 (the checkpoint's bfloat16; --dtype auto)"
  /// The projections stay as a quantized checkpoint ships them (float8, or integer codes).
  bool projections_as_shipped = false;
  /// float32 kept as packed panels alone, where nothing needs the float32 rows (no reason for
  /// float32 only): the packed kernel now matches or beats OpenBLAS at every batch size
  /// (bench/README section 29), so a second copy would only double the host memory.
  bool float32_panels_only = false;
  /// Whether packed panels are the only copy of the matrices.
  bool packed_only() const {
    return format != cpu::weight_format::f32 || projections_as_shipped || float32_panels_only;
  }
};

/// Chooses the storage for a checkpoint whose matrices are `checkpoint` (f32, f16 or bf16).
/// `why_float32_only`: empty when the model can keep packed weights alone; otherwise the
/// reason it cannot (experts, tensor parallelism, a CPU without AVX2), under which auto keeps
/// float32 and says why, while an explicit 16-bit dtype or int8 is refused naming the reason.
/// Throws std::runtime_error on an unknown dtype or quantization method, naming it.
/// A quantized checkpoint keeps its projections as shipped (the rest as above); it refuses
/// --quantization and any reason for float32.
weight_choice choose_weight_format(const weight_options& options, cpu::weight_format checkpoint,
                                   const std::string& why_float32_only,
                                   const checkpoint_quantization& quantized = {});

/// Reads config.json's quantization_config (`config_json`, its JSON text; empty: none).
/// Throws std::runtime_error naming the method (and the part of it) this engine does not read:
/// asymmetric GPTQ, GPTQ of other bit widths or checkpoint formats, AWQ GEMV, activation
/// quantization, int-quantized compressed-tensors, block-wise fp8, ...
checkpoint_quantization read_checkpoint_quantization(const std::string& config_json);

}  // namespace actorllm
