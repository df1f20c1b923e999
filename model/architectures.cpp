#include "model/architectures.hpp"

#include <cmath>
#include <functional>
#include <map>

namespace actorllm {

namespace {

constexpr int64_t max_window = 1 << 22;
constexpr int64_t max_experts = 1024;

hidden_activation read_activation(const field_reader& f, const char* key, const char* fallback) {
  const std::string act = f.string(key, fallback);
  if (act == "silu" || act == "swish") return hidden_activation::silu;
  if (act == "gelu_pytorch_tanh" || act == "gelu_tanh") return hidden_activation::gelu_tanh;
  f.fail(key, "'" + act + "' is not supported (silu, gelu_pytorch_tanh)");
}

/// One window for every layer, from `sliding_window` (absent or null: none).
void every_layer_windowed(const field_reader& f, model_config_hf& c) {
  const auto window = static_cast<int32_t>(f.integer("sliding_window", 0, 0, max_window));
  c.layer_sliding_window.assign(c.num_layers, window);
}

/// Which layers are windowed: `layer_types` where config.json lists them ("sliding_attention"
/// or "full_attention", newer configs), else `fallback(layer)`.
void windowed_layers(const field_reader& f, model_config_hf& c, int32_t window,
                     const std::function<bool(int64_t)>& fallback) {
  c.layer_sliding_window.assign(c.num_layers, 0);
  const auto types = f.strings("layer_types", static_cast<size_t>(c.num_layers));
  if (!types.empty() && static_cast<int64_t>(types.size()) != c.num_layers)
    f.fail("layer_types", "lists " + std::to_string(types.size()) + " layers, the model has " +
                              std::to_string(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    bool windowed = fallback(l);
    if (!types.empty()) {
      if (types[l] != "sliding_attention" && types[l] != "full_attention")
        f.fail("layer_types", "has '" + types[l] + "' (sliding_attention, full_attention)");
      windowed = types[l] == "sliding_attention";
    }
    if (windowed) c.layer_sliding_window[l] = window;
  }
}

void read_silu(const field_reader& f, model_config_hf& c) {
  c.activation = read_activation(f, "hidden_act", "silu");
  if (c.activation != hidden_activation::silu)
    f.fail("hidden_act", "must be silu for " + c.architecture);
}

void read_llama(const field_reader& f, model_config_hf& c) {
  read_silu(f, c);
  c.attention_bias = f.boolean("attention_bias", false);
  if (f.boolean("mlp_bias", false)) f.fail("mlp_bias", "true is not supported");
  c.layer_sliding_window.assign(c.num_layers, 0);
}

void read_mistral(const field_reader& f, model_config_hf& c) {
  read_silu(f, c);
  every_layer_windowed(f, c);
}

/// Qwen2 and Qwen3 window the layers from max_window_layers on, when use_sliding_window.
void read_qwen_window(const field_reader& f, model_config_hf& c) {
  const bool use = f.boolean("use_sliding_window", false);
  const auto window = static_cast<int32_t>(f.integer("sliding_window", 0, 0, max_window));
  const int64_t first = f.integer("max_window_layers", c.num_layers, 0, 1 << 20);
  windowed_layers(f, c, use ? window : 0, [&](int64_t l) { return use && l >= first; });
}

void read_qwen2(const field_reader& f, model_config_hf& c) {
  read_silu(f, c);
  c.attention_bias = true;  // Qwen2's q, k and v always carry biases
  read_qwen_window(f, c);
}

void read_qwen3(const field_reader& f, model_config_hf& c) {
  read_silu(f, c);
  c.attention_bias = f.boolean("attention_bias", false);
  c.qk_norm = true;
  read_qwen_window(f, c);
}

void read_phi3(const field_reader& f, model_config_hf& c) {
  read_silu(f, c);
  if (f.number("partial_rotary_factor", 1.0, 0.0, 1.5) != 1.0)
    f.fail("partial_rotary_factor", "other than 1 is not supported");
  every_layer_windowed(f, c);
}

void read_experts(const field_reader& f, model_config_hf& c, const char* count_key,
                  const char* width_key) {
  auto& m = c.moe;
  m.num_experts = f.integer(count_key, std::nullopt, 1, max_experts);
  m.top_k = f.integer("num_experts_per_tok", 2, 1, m.num_experts);
  m.expert_intermediate_size = f.integer(width_key, std::nullopt, 1, 1 << 18);
  m.layer_is_sparse.assign(c.num_layers, true);
}

void read_mixtral(const field_reader& f, model_config_hf& c) {
  read_silu(f, c);
  every_layer_windowed(f, c);
  read_experts(f, c, "num_local_experts", "intermediate_size");
  c.moe.norm_topk_prob = true;
}

/// Qwen2-MoE and Qwen3-MoE: layers from decoder_sparse_step's multiples on are sparse, except
/// those in mlp_only_layers, which keep a dense MLP of intermediate_size.
void read_qwen_moe(const field_reader& f, model_config_hf& c) {
  read_experts(f, c, "num_experts", "moe_intermediate_size");
  c.moe.norm_topk_prob = f.boolean("norm_topk_prob", false);
  const int64_t step = f.integer("decoder_sparse_step", 1, 1, 1 << 20);
  const auto dense = f.integers("mlp_only_layers", 0, c.num_layers - 1);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    bool sparse = (l + 1) % step == 0;
    for (int32_t d : dense) sparse = sparse && d != l;
    c.moe.layer_is_sparse[l] = sparse;
  }
}

void read_qwen2_moe(const field_reader& f, model_config_hf& c) {
  read_qwen2(f, c);
  read_qwen_moe(f, c);
  c.moe.shared_expert_intermediate_size =
      f.integer("shared_expert_intermediate_size", 0, 0, 1 << 18);
}

void read_qwen3_moe(const field_reader& f, model_config_hf& c) {
  read_qwen3(f, c);
  read_qwen_moe(f, c);
}

/// Gemma (1): GeGLU (hidden_activation; the older hidden_act "gelu" meant the tanh
/// approximation, which transformers applies), (1 + w) norms before each half of a layer,
/// scaled embeddings, tied embeddings; plain attention over the whole context.
void read_gemma1(const field_reader& f, model_config_hf& c) {
  c.activation = read_activation(f, "hidden_activation", "gelu_pytorch_tanh");
  c.norm_adds_one = true;
  c.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
  c.attention_bias = f.boolean("attention_bias", false);
  c.layer_sliding_window.assign(c.num_layers, 0);
}

/// Gemma 2 and 3: GeGLU, (1 + w) norms around both halves of a layer, scaled embeddings,
/// query_pre_attn_scalar, tied embeddings.
void read_gemma(const field_reader& f, model_config_hf& c) {
  c.activation =
      read_activation(f, "hidden_activation", f.string("hidden_act", "gelu_pytorch_tanh").c_str());
  c.norm_adds_one = true;
  c.sandwich_norms = true;
  c.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
  c.attention_bias = f.boolean("attention_bias", false);
  const double scalar =
      f.number("query_pre_attn_scalar", static_cast<double>(c.head_dim), 0.0, 1e9);
  c.attention_scale = 1.0 / std::sqrt(scalar);
  c.final_logit_softcapping = f.number("final_logit_softcapping", 0.0, -1e-300, 1e9);
  c.attn_logit_softcapping = f.number("attn_logit_softcapping", 0.0, -1e-300, 1e9);
}

void read_gemma2(const field_reader& f, model_config_hf& c) {
  read_gemma(f, c);
  const auto window = static_cast<int32_t>(f.integer("sliding_window", 4096, 0, max_window));
  // Even layers are windowed, odd ones global.
  windowed_layers(f, c, window, [](int64_t l) { return (l + 1) % 2 != 0; });
}

void read_gemma3(const field_reader& f, model_config_hf& c) {
  read_gemma(f, c);
  c.qk_norm = true;
  const auto window = static_cast<int32_t>(f.integer("sliding_window", 4096, 0, max_window));
  // Five windowed layers, then a global one (sliding_window_pattern 6).
  const int64_t pattern = f.integer("sliding_window_pattern", 6, 1, 1 << 20);
  windowed_layers(f, c, window, [&](int64_t l) { return (l + 1) % pattern != 0; });
  c.local_rope_theta = f.number("rope_local_base_freq", 10000.0, 0.0, 1e12);
}

using reader = void (*)(const field_reader&, model_config_hf&);

const std::map<std::string, reader>& architectures() {
  static const std::map<std::string, reader> table = {
      {"LlamaForCausalLM", read_llama},        {"MistralForCausalLM", read_mistral},
      {"Qwen2ForCausalLM", read_qwen2},        {"Qwen3ForCausalLM", read_qwen3},
      {"Phi3ForCausalLM", read_phi3},          {"MixtralForCausalLM", read_mixtral},
      {"Qwen2MoeForCausalLM", read_qwen2_moe}, {"Qwen3MoeForCausalLM", read_qwen3_moe},
      {"GemmaForCausalLM", read_gemma1},       {"Gemma2ForCausalLM", read_gemma2},
      {"Gemma3ForCausalLM", read_gemma3},
  };
  return table;
}

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const auto& [name, read] : architectures()) names.push_back(name);
  return names;
}

void read_architecture_fields(const field_reader& f, model_config_hf& c) {
  const auto it = architectures().find(c.architecture);
  if (it == architectures().end()) {
    std::string names;
    for (const auto& n : supported_architectures()) names += (names.empty() ? "" : ", ") + n;
    throw std::runtime_error(f.path().string() + ": unsupported architecture '" + c.architecture +
                             "' (supported: " + names + ")");
  }
  it->second(f, c);
}

}  // namespace actorllm
