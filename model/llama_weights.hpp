#pragma once
/// The Llama family's weights in float32, as the forward pass reads them: q, k and v fused
/// into one projection, gate and up fused into another, and the rotary table.
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"
#include "model/safetensors.hpp"

namespace actorllm {

struct llama_layer_weights {
  std::vector<float> input_norm;  // (dim)
  std::vector<float> qkv;         // (q_size + 2 * kv_size, dim)  q, k, v projections fused
  std::vector<float> qkv_bias;    // (q_size + 2 * kv_size) or empty
  std::vector<float> o;           // (dim, q_size)
  std::vector<float> post_norm;   // (dim)
  std::vector<float> gate_up;     // (2 * hidden, dim)  gate then up, fused
  std::vector<float> down;        // (dim, hidden)
};

struct llama_weights {
  std::vector<float> embed;  // (vocab, dim)
  std::vector<llama_layer_weights> layers;
  std::vector<float> final_norm;  // (dim)
  std::vector<float> lm_head;     // (vocab, dim); empty when tied to embed
  std::vector<float> cos_sin;     // (max_position, head_dim) rotary table

  /// The LM head: lm_head, or the embedding table where the two are tied.
  const std::vector<float>& head() const { return lm_head.empty() ? embed : lm_head; }

  /// Bytes of weights read per decoded token (everything but the embedding table, which is
  /// only gathered, unless it doubles as the LM head).
  int64_t bytes_read_per_token(const model_config_hf& config) const;
};

/// Reads every tensor of a Llama-family checkpoint from `store` (without the rotary table).
/// Throws std::runtime_error naming a missing tensor or a wrong shape.
llama_weights load_llama_weights(const tensor_store& store, const model_config_hf& config);

}  // namespace actorllm
