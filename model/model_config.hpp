#pragma once
/// The architecture hyper-parameters of a Hugging Face causal LM (config.json).
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/vision_config.hpp"

namespace actorllm {

/// Rotary scaling as config.json's rope_scaling says (model/rotary_table.cpp applies it).
struct rope_scaling_config {
  std::string kind = "none";  ///< none | linear | dynamic | yarn | llama3 | longrope
  double factor = 1.0;
  double low_freq_factor = 1.0;   ///< llama3
  double high_freq_factor = 4.0;  ///< llama3
  /// The context the model was trained with before scaling (llama3, dynamic, yarn, longrope).
  int64_t original_max_position_embeddings = 8192;
  double beta_fast = 32.0;        ///< yarn
  double beta_slow = 1.0;         ///< yarn
  double attention_factor = 0.0;  ///< yarn, longrope: scales cos and sin; 0: derived from factor
  std::vector<double> short_factor, long_factor;  ///< longrope: per rotary pair
};

enum class hidden_activation { silu, gelu_tanh };

/// A mixture-of-experts feed-forward (Mixtral, Qwen2-MoE, Qwen3-MoE); num_experts 0: dense.
struct moe_config {
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t expert_intermediate_size = 0;
  /// Routing weights of the chosen experts renormalised to sum to 1 (Mixtral always).
  bool norm_topk_prob = true;
  /// Qwen2-MoE's shared expert (0: none), added to every token scaled by a sigmoid gate.
  int64_t shared_expert_intermediate_size = 0;
  std::vector<bool> layer_is_sparse;  ///< per layer: experts, or the dense MLP
};

struct model_config_hf {
  std::string architecture;  ///< the HF name; model/architectures.cpp lists those supported
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  ///< the dense MLP's width
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  rope_scaling_config rope_scaling;
  /// M-RoPE (Qwen2-VL's decoder): the rotary pairs of the temporal, height and width position
  /// axes, in that order (they add up to head_dim / 2); all zero: one position per token.
  std::array<int32_t, 3> mrope_section{};
  bool tie_word_embeddings = false;
  bool attention_bias = false;  ///< q/k/v projections carry biases (Qwen2)
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
  std::string torch_dtype = "float32";
  /// quantization_config.quant_method of a quantized checkpoint (gptq, awq, fp8, ...); empty
  /// for a checkpoint of plain float tensors.
  std::string quantization_method;
  /// The whole quantization_config object as JSON text; empty when there is none.
  std::string quantization_config;

  // What sets the other families apart from Llama (each default is Llama's).
  hidden_activation activation = hidden_activation::silu;
  bool qk_norm = false;        ///< RMSNorm over each head of q and k before rotary (Qwen3, Gemma 3)
  bool norm_adds_one = false;  ///< norms scale by (1 + w) (Gemma); folded into w at load
  bool sandwich_norms = false;           ///< norms after attention and the MLP too (Gemma 2 and 3)
  double embedding_multiplier = 1.0;     ///< embeddings scaled (Gemma: sqrt(hidden_size))
  double attention_scale = 0.0;          ///< 0: 1/sqrt(head_dim) (Gemma: query_pre_attn_scalar)
  double attn_logit_softcapping = 0.0;   ///< scores become c*tanh(s/c) (Gemma 2); 0: off
  double final_logit_softcapping = 0.0;  ///< the same on the logits; 0: off
  /// Per layer: the attention window in tokens (a query sees the last `window` positions,
  /// itself included), 0 for full attention.
  std::vector<int32_t> layer_sliding_window;
  /// Rotary base of the windowed layers where it differs (Gemma 3's local layers: no
  /// scaling either); 0: every layer uses rope_theta and rope_scaling.
  double local_rope_theta = 0.0;
  moe_config moe;
  /// A vision-language model's image side (LLaVA); none: the model reads text only.
  std::optional<vision_config> vision;

  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
  float attention_softmax_scale() const;
  /// The longest context the model serves: max_position_embeddings, stretched by a rope
  /// scaling that extends it as vLLM derives it (linear and dynamic: times the factor; YaRN:
  /// the original context times the factor); llama3 and LongRoPE configs give it already.
  int64_t max_context() const;
  /// The largest window of any layer, 0 when some layer attends to everything.
  int32_t max_sliding_window() const;
  /// Parameters of every shard and every expert, for the startup log and memory planning.
  int64_t num_parameters() const;
  /// One line: the architecture's attention layout ("4 layers: 2 windowed (16), 2 full").
  std::string describe_attention() const;
};

/// Parses <model_dir>/config.json. Throws std::runtime_error naming the field or the
/// architecture when the model is not supported.
model_config_hf load_model_config(const std::filesystem::path& model_dir);

}  // namespace actorllm
