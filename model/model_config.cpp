#include "model/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "model/architectures.hpp"
#include "model/config_fields.hpp"
#include "model/vision_config.hpp"

namespace actorllm {

namespace {

/// Upper bounds, far above any released model, that keep a hostile config.json from
/// asking for unbounded memory (the rotary table alone is max_position x head_dim floats).
constexpr int64_t max_hidden_size = 1 << 16;
constexpr int64_t max_intermediate_size = 1 << 18;
constexpr int64_t max_layers = 1024;
constexpr int64_t max_heads = 1024;
constexpr int64_t max_head_dim = 1024;
constexpr int64_t max_vocab_size = 1 << 22;
constexpr int64_t max_positions = 1 << 22;
constexpr int64_t max_rotary_floats = int64_t{1} << 29;  // 2 GiB of float32

/// rope_scaling's keys for `kind`; refuses a kind not implemented, by name.
void read_rope_scaling(const field_reader& rs, const field_reader& top, model_config_hf& c) {
  auto& r = c.rope_scaling;
  r.kind = rs.string("rope_type", rs.string("type", "none"));
  // Qwen2-VL's "mrope" is the default rotary with its pairs split between three position axes
  // (mrope_section), as transformers reads it.
  if (r.kind == "mrope" && !rs.has("mrope_section"))
    rs.fail("mrope_section", "is required for mrope (the rotary pairs of each position axis)");
  if (r.kind == "default" || r.kind == "mrope") r.kind = "none";
  if (rs.has("mrope_section")) {
    const std::vector<int32_t> section = rs.integers("mrope_section", 0, c.head_dim / 2);
    if (section.size() != 3 || 2 * (int64_t{section[0]} + section[1] + section[2]) != c.head_dim)
      rs.fail("mrope_section",
              "must be three numbers of rotary pairs that add up to head_dim / 2 (" +
                  std::to_string(c.head_dim / 2) + ")");
    c.mrope_section = {section[0], section[1], section[2]};
  }
  // Phi-3 calls LongRoPE "su" (and once "longrope"); older YaRN configs say "yarn".
  if (r.kind == "su") r.kind = "longrope";
  static const char* const kinds[] = {"none", "linear", "dynamic", "yarn", "llama3", "longrope"};
  if (std::find(std::begin(kinds), std::end(kinds), r.kind) == std::end(kinds))
    throw std::runtime_error(rs.path().string() + ": unsupported rope_scaling type '" + r.kind +
                             "' (linear, dynamic, yarn, llama3, longrope)");
  r.factor = rs.number("factor", 1.0, 0.0, 1e6);
  r.low_freq_factor = rs.number("low_freq_factor", 1.0, 0.0, 1e6);
  r.high_freq_factor = rs.number("high_freq_factor", 4.0, 0.0, 1e6);
  // Phi-3 keeps original_max_position_embeddings beside rope_scaling, not inside it.
  const int64_t original =
      top.integer("original_max_position_embeddings",
                  r.kind == "llama3" ? 8192 : c.max_position_embeddings, 1, max_positions);
  r.original_max_position_embeddings =
      rs.integer("original_max_position_embeddings", original, 1, max_positions);
  r.beta_fast = rs.number("beta_fast", 32.0, 0.0, 1e6);
  r.beta_slow = rs.number("beta_slow", 1.0, 0.0, 1e6);
  r.attention_factor = rs.number("attention_factor", 0.0, -1e-300, 1e6);
  if (r.kind == "llama3" && r.high_freq_factor <= r.low_freq_factor)
    rs.fail("high_freq_factor", "must exceed low_freq_factor for llama3 scaling");
  if (r.kind == "yarn" && (rs.has("mscale") || rs.has("mscale_all_dim")))
    rs.fail("mscale", "(DeepSeek's YaRN variant) is not supported");
  // The keys Hugging Face requires of each kind (a KeyError in transformers): without one the
  // model would run with a made-up value.
  struct required_keys {
    const char* kind;
    std::vector<const char*> keys;
  };
  static const required_keys required[] = {
      {"linear", {"factor"}},
      {"dynamic", {"factor"}},
      {"yarn", {"factor"}},
      {"llama3",
       {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"}},
      {"longrope", {"short_factor", "long_factor"}},
  };
  for (const auto& [kind, keys] : required)
    if (r.kind == kind)
      for (const char* key : keys)
        if (!rs.has(key)) rs.fail(key, std::string("is required for ") + kind + " scaling");
  if (r.kind == "longrope") {
    const auto pairs = static_cast<size_t>(c.head_dim / 2);
    r.short_factor = rs.numbers("short_factor", pairs, 0.0, 1e9);
    r.long_factor = rs.numbers("long_factor", pairs, 0.0, 1e9);
    for (const char* key : {"short_factor", "long_factor"})
      if ((key[0] == 's' ? r.short_factor : r.long_factor).size() != pairs)
        rs.fail(key, "must list head_dim / 2 = " + std::to_string(pairs) + " numbers");
    // LongRoPE's factor is the context's growth where the original context is given beside
    // rope_scaling (Phi-3), as Hugging Face computes it.
    if (top.has("original_max_position_embeddings") || !rs.has("factor"))
      r.factor = static_cast<double>(c.max_position_embeddings) /
                 static_cast<double>(r.original_max_position_embeddings);
  }
}

}  // namespace

float model_config_hf::attention_softmax_scale() const {
  return static_cast<float>(attention_scale > 0 ? attention_scale
                                                : 1.0 / std::sqrt(static_cast<double>(head_dim)));
}

int64_t model_config_hf::max_context() const {
  const auto& r = rope_scaling;
  double context = static_cast<double>(max_position_embeddings);
  if (r.kind == "linear" || r.kind == "dynamic")
    context *= r.factor;
  else if (r.kind == "yarn")
    context = std::max(context, static_cast<double>(r.original_max_position_embeddings) * r.factor);
  return static_cast<int64_t>(std::min(context, 1e15));
}

int32_t model_config_hf::max_sliding_window() const {
  int32_t widest = 0;
  for (int32_t w : layer_sliding_window) {
    if (w == 0) return 0;
    widest = std::max(widest, w);
  }
  return widest;
}

int64_t model_config_hf::num_parameters() const {
  const int64_t attention = hidden_size * (q_size() + 2 * kv_size()) + q_size() * hidden_size;
  const int64_t norms = (sandwich_norms ? 4 : 2) * hidden_size + (qk_norm ? 2 * head_dim : 0);
  const int64_t dense_mlp = 3 * hidden_size * intermediate_size;
  const int64_t sparse_mlp =
      moe.num_experts * (3 * hidden_size * moe.expert_intermediate_size + hidden_size) +
      (moe.shared_expert_intermediate_size > 0
           ? 3 * hidden_size * moe.shared_expert_intermediate_size + hidden_size
           : 0);
  int64_t layers = 0;
  for (int64_t l = 0; l < num_layers; ++l) {
    const bool sparse = moe.num_experts > 0 &&
                        l < static_cast<int64_t>(moe.layer_is_sparse.size()) &&
                        moe.layer_is_sparse[l];
    layers += attention + norms + (sparse ? sparse_mlp : dense_mlp);
  }
  const int64_t embeddings = vocab_size * hidden_size * (tie_word_embeddings ? 1 : 2);
  return layers + embeddings + hidden_size;
}

std::string model_config_hf::describe_attention() const {
  std::ostringstream out;
  out << num_heads << " heads (" << num_kv_heads << " KV) of " << head_dim << ", " << num_layers
      << " layers";
  int64_t windowed = 0;
  int32_t widest = 0;
  for (int32_t w : layer_sliding_window)
    if (w > 0) ++windowed, widest = std::max(widest, w);
  if (windowed > 0)
    out << ": " << windowed << " windowed (" << widest << " tokens), " << num_layers - windowed
        << " full";
  if (moe.num_experts > 0) out << "; " << moe.num_experts << " experts, top " << moe.top_k;
  return out.str();
}

namespace {
/// A decoder's config.json object (or a wrapper's text_config), read from `path`.
model_config_hf read_decoder_config(const nlohmann::json& j, const std::filesystem::path& path);
}  // namespace

model_config_hf load_model_config(const std::filesystem::path& model_dir) {
  const auto path = model_dir / "config.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (is this a model folder?)");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path.string() + ": not valid JSON");
  if (!j.is_object()) throw std::runtime_error(path.string() + ": not a JSON object");
  const bool multimodal = j.contains("architectures") && j["architectures"].is_array() &&
                          !j["architectures"].empty() && j["architectures"][0].is_string() &&
                          is_multimodal_architecture(j["architectures"][0].get<std::string>());
  if (!multimodal) return read_decoder_config(j, path);
  multimodal_config_parts parts = split_multimodal_config(j, path);
  model_config_hf c = read_decoder_config(parts.text, path.string() + " (text_config)");
  c.architecture = j["architectures"][0].get<std::string>();
  c.vision = std::move(parts.vision);
  return c;
}

namespace {

model_config_hf read_decoder_config(const nlohmann::json& j, const std::filesystem::path& path) {
  const field_reader f(j, path);

  model_config_hf c;
  if (f.has("architectures") && (!j["architectures"].is_array() || j["architectures"].empty() ||
                                 !j["architectures"][0].is_string()))
    f.fail("architectures", "must be a list of names, got " + j["architectures"].dump());
  c.architecture = f.has("architectures") ? j["architectures"][0].get<std::string>() : "";
  const auto names = supported_architectures();
  if (std::find(names.begin(), names.end(), c.architecture) == names.end())
    read_architecture_fields(f, c);  // throws, naming what is supported
  c.hidden_size = f.integer("hidden_size", std::nullopt, 1, max_hidden_size);
  c.intermediate_size = f.integer("intermediate_size", std::nullopt, 1, max_intermediate_size);
  c.num_layers = f.integer("num_hidden_layers", std::nullopt, 1, max_layers);
  c.num_heads = f.integer("num_attention_heads", std::nullopt, 1, max_heads);
  c.num_kv_heads = f.integer("num_key_value_heads", c.num_heads, 1, c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0)
    f.fail("num_attention_heads", "(" + std::to_string(c.num_heads) +
                                      ") must be a multiple of num_key_value_heads (" +
                                      std::to_string(c.num_kv_heads) + ")");
  if (!f.has("head_dim") && c.hidden_size % c.num_heads != 0)
    f.fail("hidden_size", "(" + std::to_string(c.hidden_size) +
                              ") must be a multiple of num_attention_heads (" +
                              std::to_string(c.num_heads) + ") when head_dim is not given");
  c.head_dim = f.integer("head_dim", c.hidden_size / c.num_heads, 2, max_head_dim);
  if (c.head_dim % 2 != 0)
    f.fail("head_dim", "must be even (rotary pairs), got " + std::to_string(c.head_dim));
  c.vocab_size = f.integer("vocab_size", std::nullopt, 1, max_vocab_size);
  c.max_position_embeddings = f.integer("max_position_embeddings", 2048, 1, max_positions);
  if (c.max_position_embeddings * c.head_dim > max_rotary_floats)
    f.fail("max_position_embeddings", "(" + std::to_string(c.max_position_embeddings) +
                                          ") times head_dim (" + std::to_string(c.head_dim) +
                                          ") exceeds the rotary table's bound of " +
                                          std::to_string(max_rotary_floats) + " values");
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6, 0.0, 1.0);
  c.rope_theta = f.number("rope_theta", 10000.0, 0.0, 1e12);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  c.bos_token_id = static_cast<int32_t>(f.integer("bos_token_id", -1, -1, c.vocab_size - 1));
  c.eos_token_ids = f.integers("eos_token_id", 0, c.vocab_size - 1);
  c.torch_dtype = f.string("torch_dtype", "float32");
  if (f.has("quantization_config")) {
    if (!j["quantization_config"].is_object())
      f.fail("quantization_config", "must be an object, got " + j["quantization_config"].dump());
    c.quantization_method =
        field_reader(j["quantization_config"], path.string() + " (quantization_config)")
            .string("quant_method", "unnamed");
    c.quantization_config = j["quantization_config"].dump();
  }
  read_architecture_fields(f, c);

  if (f.has("rope_scaling")) {
    if (!j["rope_scaling"].is_object())
      f.fail("rope_scaling", "must be an object, got " + j["rope_scaling"].dump());
    read_rope_scaling(field_reader(j["rope_scaling"], path.string() + " (rope_scaling)"), f, c);
    if (c.max_context() > max_positions || c.max_context() * c.head_dim > max_rotary_floats)
      f.fail("rope_scaling", "stretches the context to " + std::to_string(c.max_context()) +
                                 " positions, beyond the rotary table's bound of " +
                                 std::to_string(max_rotary_floats / c.head_dim));
  }
  return c;
}

}  // namespace

}  // namespace actorllm
