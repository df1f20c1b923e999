#pragma once
/// The Llama projections packed into the panels of cpu::linear_packed: either a second copy
/// of float32 weights (decode-sized batches), or the model's only copy of its matrices, in
/// the checkpoint's 16-bit type or int8, read straight from the mapped checkpoint.
#include <memory>
#include <vector>

#include "kernels/cpu/packed_linear.hpp"
#include "model/llama_weights.hpp"
#include "model/model_config.hpp"
#include "model/safetensors.hpp"
#include "model/weight_options.hpp"

namespace actorllm {

/// The projection weights as packed panels. As a copy of float32 weights it is made when a
/// CPU engine loads the model (prepare_cpu_weights), or else on the first CPU forward, so a
/// model that only feeds a GPU never pays for it: it doubles the host memory of the
/// projections. As the only copy (load_packed_llama_weights) it is made at load.
struct packed_llama_weights {
  struct layer {
    cpu::packed_matrix qkv, o, gate_up, down;
  };
  std::vector<layer> layers;
  cpu::packed_matrix lm_head;  // packed from embed when tied
  /// The embedding table, gathered from, when these panels are the only copy and the head is
  /// not tied (tied: lm_head is the table); empty otherwise.
  cpu::packed_matrix embed;

  /// Bytes of every panel and scale.
  int64_t bytes() const;
  /// The embedding table's packed copy: embed, or lm_head where the two are tied.
  const cpu::packed_matrix& embedding_table() const { return embed.empty() ? lm_head : embed; }
};

/// Packs every projection of `weights` and the LM head (the embedding table where tied).
/// `config` is the shard's view the weights were cut to. Needs cpu::packed_linear_supported().
std::unique_ptr<packed_llama_weights> pack_llama_weights(const llama_weights& weights,
                                                         const model_config_hf& config);

/// Packs the matrices of a dense model (no experts, one shard) straight from the checkpoint
/// into `format`: q, k and v fused, gate and up fused, the LM head, and the embedding table
/// (the LM head where tied). float8 tensors stay float8, with their weight_scale; the integer
/// projections of a GPTQ, AWQ or pack-quantized checkpoint (`quantized`) stay 4- or 8-bit
/// with their groups' scales and zero points. Throws std::runtime_error naming a missing
/// tensor or a wrong shape. Needs cpu::packed_linear_supported().
std::unique_ptr<packed_llama_weights> load_packed_llama_weights(
    const tensor_store& store, const model_config_hf& config, cpu::weight_format format,
    const checkpoint_quantization& quantized = {});

/// The format of a checkpoint tensor's values as a packing source.
cpu::weight_format source_format(tensor_dtype dtype);

}  // namespace actorllm
