// parse_speculative_config: vLLM's --speculative-config JSON, every key checked.
#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "config/engine_config.hpp"

namespace actorllm {

namespace {

constexpr int32_t max_speculative_tokens = 32;  // drafts per sequence and step
constexpr int32_t max_lookup = 64;              // n-gram suffix length

}  // namespace

std::string parse_speculative_config(std::string_view text, speculative_config& out) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "must be a JSON object, as {\"method\":\"ngram\",...}";
  speculative_config c;
  std::string error;
  auto integer = [&](const char* key, int32_t low, int32_t high, int32_t& into) {
    if (!json.contains(key)) return false;
    const auto& v = json[key];
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) {
      if (error.empty())
        error = std::string(key) + " must be a whole number in [" + std::to_string(low) + ", " +
                std::to_string(high) + "]";
      return false;
    }
    into = static_cast<int32_t>(v.get<int64_t>());
    return true;
  };
  for (const auto& [key, value] : json.items()) {
    static const char* known[] = {"method",
                                  "model",
                                  "num_speculative_tokens",
                                  "prompt_lookup_min",
                                  "prompt_lookup_max",
                                  "disable_by_batch_size",
                                  "min_acceptance_rate"};
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      return "unknown key '" + key +
             "' (known: method, model, num_speculative_tokens, "
             "prompt_lookup_min, prompt_lookup_max, disable_by_batch_size, min_acceptance_rate)";
  }
  const std::string method = json.value("method", json.contains("model") ? "draft_model" : "");
  if (json.contains("method") && !json["method"].is_string()) return "method must be a string";
  if (method == "ngram") {
    c.method = speculative_method::ngram;
  } else if (method == "draft_model") {
    c.method = speculative_method::draft_model;
    if (!json.contains("model") || !json["model"].is_string() ||
        json["model"].get<std::string>().empty())
      return "a draft model needs \"model\": the draft's folder";
    c.draft_model = json["model"].get<std::string>();
  } else {
    return "method '" + method +
           "' is not supported (ngram, or draft_model with \"model\"; eagle, medusa and "
           "mlp_speculator are not)";
  }
  if (!integer("num_speculative_tokens", 1, max_speculative_tokens, c.num_speculative_tokens))
    return error.empty() ? "num_speculative_tokens is required" : error;
  // vLLM: one bound given sets both; neither gives 5.
  const bool has_min = integer("prompt_lookup_min", 1, max_lookup, c.prompt_lookup_min);
  const bool has_max = integer("prompt_lookup_max", 1, max_lookup, c.prompt_lookup_max);
  if (!error.empty()) return error;
  if (has_min && !has_max) c.prompt_lookup_max = c.prompt_lookup_min;
  if (has_max && !has_min) c.prompt_lookup_min = c.prompt_lookup_max;
  if (c.prompt_lookup_min > c.prompt_lookup_max)
    return "prompt_lookup_min must not exceed prompt_lookup_max";
  integer("disable_by_batch_size", 0, 1 << 20, c.disable_by_batch_size);
  if (!error.empty()) return error;
  if (json.contains("min_acceptance_rate")) {
    const auto& v = json["min_acceptance_rate"];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1)
      return "min_acceptance_rate must be a number in [0, 1]";
    c.min_acceptance_rate = v.get<double>();
  }
  out = std::move(c);
  return {};
}

}  // namespace actorllm
