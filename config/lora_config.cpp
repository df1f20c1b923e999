// parse_lora_module: one value of vLLM's --lora-modules, as name=path or a JSON object.
#include <nlohmann/json.hpp>

#include "config/engine_config.hpp"

namespace actorllm {

std::string parse_lora_module(std::string_view text, lora_config& out) {
  lora_module module;
  if (!text.empty() && text.front() == '{') {
    const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) return "a JSON value must be an object, as {\"name\":…,\"path\":…}";
    for (const auto& [key, value] : json.items()) {
      if (key != "name" && key != "path" && key != "base_model_name")
        return "unknown key '" + key + "' (known: name, path, base_model_name)";
      if (!value.is_string()) return key + " must be a string";
    }
    module.name = json.value("name", "");
    module.path = json.value("path", "");
  } else {
    const auto eq = text.find('=');
    if (eq == std::string_view::npos) return "must be NAME=PATH (got '" + std::string(text) + "')";
    module.name = std::string(text.substr(0, eq));
    module.path = std::string(text.substr(eq + 1));
  }
  if (module.name.empty() || module.path.empty()) return "an adapter needs a name and a path";
  if (module.name.size() > 256) return "an adapter name is at most 256 characters";
  for (const auto& m : out.modules)
    if (m.name == module.name) return "adapter '" + module.name + "' is given twice";
  out.modules.push_back(std::move(module));
  out.enable_lora = true;  // as vLLM: modules imply LoRA
  return {};
}

}  // namespace actorllm
