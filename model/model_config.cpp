#include "model/model_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace actorllm {

namespace {

template <typename T>
T required(const nlohmann::json& j, const char* key, const std::filesystem::path& path) {
  if (!j.contains(key) || j[key].is_null())
    throw std::runtime_error(path.string() + ": missing field '" + key + "'");
  return j[key].get<T>();
}

template <typename T>
T optional_field(const nlohmann::json& j, const char* key, T fallback) {
  return j.contains(key) && !j[key].is_null() ? j[key].get<T>() : fallback;
}

}  // namespace

int64_t model_config_hf::num_parameters() const {
  const int64_t per_layer = hidden_size * (q_size() + 2 * kv_size()) + q_size() * hidden_size +
                            3 * hidden_size * intermediate_size + 2 * hidden_size;
  const int64_t embeddings = vocab_size * hidden_size * (tie_word_embeddings ? 1 : 2);
  return num_layers * per_layer + embeddings + hidden_size;
}

model_config_hf load_model_config(const std::filesystem::path& model_dir) {
  const auto path = model_dir / "config.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (is this a model folder?)");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path.string() + ": not valid JSON");

  model_config_hf c;
  const auto archs = optional_field<std::vector<std::string>>(j, "architectures", {});
  c.architecture = archs.empty() ? "" : archs.front();
  if (c.architecture != "LlamaForCausalLM" && c.architecture != "MistralForCausalLM" &&
      c.architecture != "Qwen2ForCausalLM")
    throw std::runtime_error(
        path.string() + ": unsupported architecture '" + c.architecture +
        "' (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)");
  c.hidden_size = required<int64_t>(j, "hidden_size", path);
  c.intermediate_size = required<int64_t>(j, "intermediate_size", path);
  c.num_layers = required<int64_t>(j, "num_hidden_layers", path);
  c.num_heads = required<int64_t>(j, "num_attention_heads", path);
  c.num_kv_heads = optional_field<int64_t>(j, "num_key_value_heads", c.num_heads);
  c.head_dim = optional_field<int64_t>(j, "head_dim", c.hidden_size / c.num_heads);
  c.vocab_size = required<int64_t>(j, "vocab_size", path);
  c.max_position_embeddings = optional_field<int64_t>(j, "max_position_embeddings", 2048);
  c.rms_norm_eps = optional_field<double>(j, "rms_norm_eps", 1e-6);
  c.rope_theta = optional_field<double>(j, "rope_theta", 10000.0);
  c.tie_word_embeddings = optional_field<bool>(j, "tie_word_embeddings", false);
  c.attention_bias =
      optional_field<bool>(j, "attention_bias", c.architecture == "Qwen2ForCausalLM");
  c.bos_token_id = optional_field<int32_t>(j, "bos_token_id", -1);
  if (j.contains("eos_token_id") && j["eos_token_id"].is_array())
    c.eos_token_ids = j["eos_token_id"].get<std::vector<int32_t>>();
  else if (j.contains("eos_token_id") && j["eos_token_id"].is_number_integer())
    c.eos_token_ids = {j["eos_token_id"].get<int32_t>()};
  c.torch_dtype = optional_field<std::string>(j, "torch_dtype", "float32");

  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    const auto& rs = j["rope_scaling"];
    c.rope_scaling.kind = optional_field<std::string>(
        rs, "rope_type", optional_field<std::string>(rs, "type", "none"));
    c.rope_scaling.factor = optional_field<double>(rs, "factor", 1.0);
    c.rope_scaling.low_freq_factor = optional_field<double>(rs, "low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = optional_field<double>(rs, "high_freq_factor", 4.0);
    c.rope_scaling.original_max_position_embeddings =
        optional_field<int64_t>(rs, "original_max_position_embeddings", 8192);
    if (c.rope_scaling.kind != "llama3" && c.rope_scaling.kind != "linear" &&
        c.rope_scaling.kind != "default" && c.rope_scaling.kind != "none")
      throw std::runtime_error(path.string() + ": unsupported rope_scaling type '" +
                               c.rope_scaling.kind + "' (llama3, linear)");
  }
  if (c.num_heads <= 0 || c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
    throw std::runtime_error(path.string() +
                             ": num_attention_heads must be a multiple of num_key_value_heads");
  return c;
}

}  // namespace actorllm
