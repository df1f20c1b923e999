// parse_pooler_config: vLLM's --override-pooler-config JSON, every key checked.
#include <nlohmann/json.hpp>

#include "config/engine_config.hpp"

namespace actorllm {

std::string parse_pooler_config(std::string_view text, model_config& out) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return "must be a JSON object, as {\"pooling_type\":\"MEAN\"}";
  for (const auto& [key, value] : json.items()) {
    if (key == "pooling_type") {
      const std::string type = value.is_string() ? value.get<std::string>() : "";
      if (type != "LAST" && type != "MEAN")
        return "pooling_type must be LAST or MEAN (CLS and STEP are not supported)";
      out.pooling_type = type;
    } else if (key == "normalize") {
      if (!value.is_boolean()) return "normalize must be true or false";
      out.normalize_embeddings = value.get<bool>();
    } else {
      return "unknown key '" + key + "' (known: pooling_type, normalize)";
    }
  }
  return {};
}

}  // namespace actorllm
