#pragma once
/// A decoder's weights in float32, as the forward pass reads them: q, k and v fused into one
/// projection, gate and up fused into another (per expert too), the rotary tables, and
/// whatever a family adds (q/k norms, Gemma's norms after attention and the MLP, experts).
/// Gemma's (1 + w) norm weights are stored as (1 + w), so one RMSNorm kernel serves all.
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"
#include "model/rotary_table.hpp"
#include "model/safetensors.hpp"

namespace actorllm {

/// One feed-forward block: down(act(gate) * up).
struct mlp_weights {
  std::vector<float> gate_up;  // (2 * width, dim)  gate then up, fused
  std::vector<float> down;     // (dim, width)
  int64_t width = 0;
};

/// A mixture of experts: a router, experts, and (Qwen2-MoE) a shared expert with its gate.
struct moe_weights {
  std::vector<float> router;  // (num_experts, dim)
  std::vector<mlp_weights> experts;
  mlp_weights shared;              // width 0: none
  std::vector<float> shared_gate;  // (dim): sigmoid(x . shared_gate) scales the shared expert
};

struct llama_layer_weights {
  std::vector<float> input_norm;     // (dim)
  std::vector<float> qkv;            // (q_size + 2 * kv_size, dim)  q, k, v projections fused
  std::vector<float> qkv_bias;       // (q_size + 2 * kv_size) or empty
  std::vector<float> q_norm;         // (head_dim) or empty: RMSNorm over each head of q
  std::vector<float> k_norm;         // (head_dim) or empty
  std::vector<float> o;              // (dim, q_size)
  std::vector<float> attn_out_norm;  // (dim) or empty: norm of the attention's output (Gemma)
  std::vector<float> post_norm;      // (dim) the norm before the MLP
  std::vector<float> mlp_out_norm;   // (dim) or empty: norm of the MLP's output (Gemma)
  std::vector<float> gate_up;        // (2 * hidden, dim)  gate then up, fused; empty when sparse
  std::vector<float> down;           // (dim, hidden)
  moe_weights moe;                   // experts empty: a dense layer
  bool sparse() const { return !moe.experts.empty(); }
};

struct llama_weights {
  std::vector<float> embed;  // (vocab, dim)
  std::vector<llama_layer_weights> layers;
  std::vector<float> final_norm;  // (dim)
  std::vector<float> lm_head;     // (vocab, dim); empty when tied to embed
  rotary_table rotary;            // the full-attention layers' (and every layer's, usually)
  rotary_table local_rotary;      // the windowed layers' where they have their own base
  /// The global table's rows, as the CUDA backend uploads them.
  const std::vector<float>& cos_sin() const { return rotary.cos_sin; }

  /// The LM head: lm_head, or the embedding table where the two are tied.
  const std::vector<float>& head() const { return lm_head.empty() ? embed : lm_head; }

  /// Bytes of these float32 weights read per decoded token (everything but the embedding
  /// table, which is only gathered, unless it doubles as the LM head; of the experts, the
  /// top-k's share); matrices kept only as packed panels are not counted here.
  int64_t bytes_read_per_token(const model_config_hf& config) const;
};

/// Reads every tensor of the checkpoint in `store` for `config`'s architecture (without the
/// rotary tables). Throws std::runtime_error naming a missing tensor or a wrong shape.
/// Without `with_matrices` (a dense model whose packed panels are the only copy of its
/// matrices: load_packed_llama_weights) the embedding table, the projections and the LM head
/// stay empty, and only norms and biases are read.
llama_weights load_llama_weights(const tensor_store& store, const model_config_hf& config,
                                 bool with_matrices = true);

}  // namespace actorllm
