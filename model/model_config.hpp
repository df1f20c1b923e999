#pragma once
/// The architecture hyper-parameters of a Hugging Face causal LM (config.json).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace actorllm {

/// Rotary scaling as config.json's rope_scaling says; kind "none" or "llama3" (Llama 3.1+),
/// or "linear".
struct rope_scaling_config {
  std::string kind = "none";
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct model_config_hf {
  std::string architecture;  ///< LlamaForCausalLM | MistralForCausalLM | Qwen2ForCausalLM
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  rope_scaling_config rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  ///< q/k/v projections carry biases (Qwen2)
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
  std::string torch_dtype = "float32";

  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
  /// Float32 parameters, for bandwidth bounds and memory planning.
  int64_t num_parameters() const;
};

/// Parses <model_dir>/config.json. Throws std::runtime_error naming the field or the
/// architecture when the model is not supported.
model_config_hf load_model_config(const std::filesystem::path& model_dir);

}  // namespace actorllm
