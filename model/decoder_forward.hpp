#pragma once
/// The forward pass of every decoder architecture, written once over the forward ops
/// (kernels/forward_ops.hpp) that each backend implements: Llama, Mistral, Qwen2/3, Phi-3,
/// Gemma 2/3 and the mixtures of experts differ only in data (model_config_hf and which
/// weights exist), read here. One step's batch (prefill chunks and decodes together) runs
/// through the paged KV cache the backend's ops are bound to; the logits, and the hidden
/// states asked for, stay with the backend.
#include <cstdint>
#include <vector>

#include "kernels/forward_ops.hpp"
#include "model/forward_batch.hpp"
#include "model/model_config.hpp"

namespace actorllm {

/// One layer's weights as a backend's handles (null: the layer has no such tensor).
struct decoder_layer_refs {
  op_weight input_norm = nullptr;
  op_linear qkv;                                 ///< q, k and v rows fused, with their bias (Qwen2)
  op_weight q_norm = nullptr, k_norm = nullptr;  ///< per-head norms (Qwen3, Gemma 3)
  op_linear o;
  op_weight attn_out_norm = nullptr;  ///< Gemma's sandwich norms
  op_weight post_norm = nullptr;      ///< the norm before the MLP
  op_weight mlp_out_norm = nullptr;
  op_linear gate_up, down;  ///< a dense layer's MLP
  // A sparse layer: the router and each expert's MLP, and a shared expert (width 0: none).
  op_weight router = nullptr;
  std::vector<op_linear> expert_gate_up, expert_down;
  int64_t expert_width = 0;
  op_linear shared_gate_up, shared_down;
  int64_t shared_width = 0;
  op_weight shared_gate = nullptr;
  bool sparse() const { return router != nullptr; }
};

/// The model's weights as a backend's handles.
struct decoder_refs {
  op_weight embed = nullptr;
  std::vector<decoder_layer_refs> layers;
  op_weight final_norm = nullptr;
  op_linear head;                    ///< the LM head (the embedding table's handle where tied)
  op_weight rotary = nullptr;        ///< (rows, head_dim) cosines then sines
  op_weight local_rotary = nullptr;  ///< the windowed layers' own table (Gemma 3), or null
  /// LongRoPE (Phi-3): a sequence longer than this reads the table's rows from here on
  /// (position + offset); 0: one set of rows.
  int64_t long_rope_offset = 0;
};

/// Host-side scratch of the forward, reused between steps.
struct decoder_scratch {
  std::vector<int32_t> rope_positions;
  std::vector<op_lora_pair> lora;  ///< (num_lora_targets, adapters) of the current layer
  std::vector<mlp_params> experts;
};

/// The dims the ops size their buffers by: the shard's heads and widths.
forward_dims dims_of(const model_config_hf& config);

/// Runs `batch` through the model: its new K/V into the cache the ops are bound to, the logits
/// of batch.logits_indices and the final hidden states of batch.hidden_indices into the
/// backend. Rows of batch.token_adapters add their LoRA adapter's update after each projection
/// it targets (dense models on one shard: throws std::invalid_argument otherwise).
void decoder_forward(const model_config_hf& config, const decoder_refs& weights,
                     const forward_batch& batch, forward_ops& ops, decoder_scratch& scratch,
                     int32_t tp_size = 1);

}  // namespace actorllm
