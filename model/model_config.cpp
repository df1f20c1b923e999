#include "model/model_config.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace actorllm {

namespace {

/// Reads config.json's fields with their types and ranges checked: every refusal names the
/// file and the field, since a hostile or broken folder must not crash the loader (a zero
/// head count divides by zero, a huge context allocates without bound).
class field_reader {
 public:
  field_reader(const nlohmann::json& j, std::filesystem::path path)
      : j_(j), path_(std::move(path)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  /// An integer in [lo, hi]; `fallback` when absent (required fields pass nullopt).
  int64_t integer(const char* key, std::optional<int64_t> fallback, int64_t lo, int64_t hi) const {
    if (!has(key)) return fallback ? *fallback : missing(key);
    const auto& v = j_[key];
    if (!v.is_number_integer()) {
      if (v.is_number_float()) fail(key, "must be a whole number, got " + v.dump());
      fail(key, "must be an integer, got " + type_of(v));
    }
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(key, out_of_range(v.dump(), lo, hi));
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(key, out_of_range(v.dump(), lo, hi));
    return x;
  }

  /// A finite number in the open interval (lo, hi).
  double number(const char* key, double fallback, double lo, double hi) const {
    if (!has(key)) return fallback;
    const auto& v = j_[key];
    if (!v.is_number()) fail(key, "must be a number, got " + type_of(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x <= lo || x >= hi)
      fail(key, "must be above " + fmt(lo) + " and below " + fmt(hi) + ", got " + v.dump());
    return x;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) fail(key, "must be true or false, got " + type_of(j_[key]));
    return j_[key].get<bool>();
  }

  std::string string(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) fail(key, "must be a string, got " + type_of(j_[key]));
    return j_[key].get<std::string>();
  }

  /// An integer or a list of integers in [lo, hi] (eos_token_id takes either form).
  std::vector<int32_t> integers(const char* key, int64_t lo, int64_t hi) const {
    if (!has(key)) return {};
    const auto& v = j_[key];
    if (!v.is_array()) return {static_cast<int32_t>(integer(key, std::nullopt, lo, hi))};
    std::vector<int32_t> out;
    for (const auto& item : v) {
      if (!item.is_number_integer()) fail(key, "must hold integers, got " + type_of(item));
      const int64_t x = item.get<int64_t>();
      if (x < lo || x > hi) fail(key, out_of_range(item.dump(), lo, hi));
      out.push_back(static_cast<int32_t>(x));
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error(path_.string() + ": field '" + key + "' " + what);
  }

 private:
  [[noreturn]] int64_t missing(const char* key) const {
    throw std::runtime_error(path_.string() + ": missing field '" + key + "'");
  }
  static std::string type_of(const nlohmann::json& v) {
    return std::string(v.type_name()) + " " + v.dump().substr(0, 40);
  }
  static std::string fmt(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
  }
  static std::string out_of_range(const std::string& got, int64_t lo, int64_t hi) {
    return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + got;
  }

  const nlohmann::json& j_;
  std::filesystem::path path_;
};

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

  if (!j.is_object()) throw std::runtime_error(path.string() + ": not a JSON object");
  const field_reader f(j, path);

  model_config_hf c;
  if (f.has("architectures") &&
      (!j["architectures"].is_array() || j["architectures"].empty() ||
       !j["architectures"][0].is_string()))
    f.fail("architectures", "must be a list of names, got " + j["architectures"].dump());
  c.architecture = f.has("architectures") ? j["architectures"][0].get<std::string>() : "";
  if (c.architecture != "LlamaForCausalLM" && c.architecture != "MistralForCausalLM" &&
      c.architecture != "Qwen2ForCausalLM")
    throw std::runtime_error(
        path.string() + ": unsupported architecture '" + c.architecture +
        "' (supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)");
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
  if (c.head_dim % 2 != 0) f.fail("head_dim", "must be even (rotary pairs), got " +
                                                  std::to_string(c.head_dim));
  c.vocab_size = f.integer("vocab_size", std::nullopt, 1, max_vocab_size);
  c.max_position_embeddings = f.integer("max_position_embeddings", 2048, 1, max_positions);
  if (c.max_position_embeddings * c.head_dim > max_rotary_floats)
    f.fail("max_position_embeddings",
           "(" + std::to_string(c.max_position_embeddings) + ") times head_dim (" +
               std::to_string(c.head_dim) + ") exceeds the rotary table's bound of " +
               std::to_string(max_rotary_floats) + " values");
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6, 0.0, 1.0);
  c.rope_theta = f.number("rope_theta", 10000.0, 0.0, 1e12);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  c.attention_bias = f.boolean("attention_bias", c.architecture == "Qwen2ForCausalLM");
  const std::string act = f.string("hidden_act", "silu");
  if (act != "silu")
    f.fail("hidden_act", "'" + act + "' is not supported by " + c.architecture + " (silu)");
  c.bos_token_id =
      static_cast<int32_t>(f.integer("bos_token_id", -1, -1, c.vocab_size - 1));
  c.eos_token_ids = f.integers("eos_token_id", 0, c.vocab_size - 1);
  c.torch_dtype = f.string("torch_dtype", "float32");

  if (f.has("rope_scaling")) {
    if (!j["rope_scaling"].is_object())
      f.fail("rope_scaling", "must be an object, got " + j["rope_scaling"].dump());
    const field_reader rs(j["rope_scaling"], path.string() + " (rope_scaling)");
    c.rope_scaling.kind = rs.string("rope_type", rs.string("type", "none"));
    if (c.rope_scaling.kind != "llama3" && c.rope_scaling.kind != "linear" &&
        c.rope_scaling.kind != "default" && c.rope_scaling.kind != "none")
      throw std::runtime_error(path.string() + ": unsupported rope_scaling type '" +
                               c.rope_scaling.kind + "' (llama3, linear)");
    c.rope_scaling.factor = rs.number("factor", 1.0, 0.0, 1e6);
    c.rope_scaling.low_freq_factor = rs.number("low_freq_factor", 1.0, 0.0, 1e6);
    c.rope_scaling.high_freq_factor = rs.number("high_freq_factor", 4.0, 0.0, 1e6);
    c.rope_scaling.original_max_position_embeddings =
        rs.integer("original_max_position_embeddings", 8192, 1, max_positions);
    if (c.rope_scaling.kind == "llama3" &&
        c.rope_scaling.high_freq_factor <= c.rope_scaling.low_freq_factor)
      rs.fail("high_freq_factor", "must exceed low_freq_factor for llama3 scaling");
  }
  return c;
}

}  // namespace actorllm
