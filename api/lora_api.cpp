#include "api/lora_api.hpp"

#include <nlohmann/json.hpp>

namespace actorllm::api {

std::optional<api_error> parse_lora_update(std::string_view body, bool load,
                                           lora_update_request& out) {
  const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return bad_request("the body must be a JSON object");
  const auto text = [&](const char* key, size_t limit,
                        std::string& field) -> std::optional<api_error> {
    const auto it = json.find(key);
    if (it == json.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
      return bad_request(std::string(key) + " must be a non-empty string", key);
    if (it->get_ref<const std::string&>().size() > limit)
      return bad_request(std::string(key) + " is longer than " + std::to_string(limit) + " bytes",
                         key);
    field = it->get<std::string>();
    return std::nullopt;
  };
  if (auto error = text("lora_name", max_lora_name_bytes, out.name)) return error;
  if (load) {
    if (auto error = text("lora_path", max_lora_path_bytes, out.path)) return error;
    if (json.contains("base_model_name") && !json["base_model_name"].is_null())
      if (auto error = text("base_model_name", max_lora_name_bytes, out.base_model)) return error;
  }
  return std::nullopt;
}

std::pair<std::optional<api_error>, std::string> apply_lora_update(engine_port& engine,
                                                                   const lora_update_request& r,
                                                                   bool load) {
  if (load && !r.base_model.empty() && !engine.find_model(r.base_model)) {
    api_error error = not_found("The model `" + r.base_model + "` does not exist.");
    error.param = "base_model_name";
    return {std::move(error), {}};
  }
  const lora_update_result result =
      load ? engine.load_lora_adapter(r) : engine.unload_lora_adapter(r.name);
  if (!result.error.empty()) {
    api_error error = result.status == 404 ? not_found(result.error) : bad_request(result.error);
    error.param = "lora_name";
    return {std::move(error), {}};
  }
  return {std::nullopt, load ? "Success: LoRA adapter '" + r.name + "' added successfully."
                             : "Success: LoRA adapter '" + r.name + "' removed successfully."};
}

}  // namespace actorllm::api
