#include "tool_calls/forced_calls_schema.hpp"

#include <stdexcept>
#include <string>

namespace actorllm::tool_calls {
namespace {

const nlohmann::json& function_of(const nlohmann::json& tool) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!tool.is_object()) return empty;
  const auto it = tool.find("function");
  return it != tool.end() && it->is_object() ? *it : empty;
}

// The parameters schema, or an empty object's when the tool has none (vLLM's rule).
nlohmann::json parameters_of(const nlohmann::json& function) {
  const auto it = function.find("parameters");
  if (it == function.end() || it->is_null() || (it->is_object() && it->empty())) {
    return {{"type", "object"}, {"properties", nlohmann::json::object()}};
  }
  return *it;
}

}  // namespace

nlohmann::json required_calls_schema(const nlohmann::json& tools) {
  nlohmann::json any_of = nlohmann::json::array();
  nlohmann::json defs = nlohmann::json::object();
  for (const nlohmann::json& tool : tools) {
    const nlohmann::json& function = function_of(tool);
    nlohmann::json parameters = parameters_of(function);
    if (parameters.is_object() && parameters.contains("$defs")) {
      for (const auto& [def_name, def_schema] : parameters["$defs"].items()) {
        if (defs.contains(def_name) && defs[def_name] != def_schema) {
          throw std::invalid_argument("Tool definition '" + def_name +
                                      "' has multiple schemas, which is not supported.");
        }
        defs[def_name] = def_schema;
      }
      parameters.erase("$defs");
    }
    any_of.push_back({{"properties",
                       {{"name", {{"type", "string"}, {"enum", {function.value("name", "")}}}},
                        {"parameters", parameters}}},
                      {"required", {"name", "parameters"}}});
  }
  nlohmann::json schema = {
      {"type", "array"}, {"minItems", 1}, {"items", {{"type", "object"}, {"anyOf", any_of}}}};
  if (!defs.empty()) schema["$defs"] = defs;
  return schema;
}

nlohmann::json named_call_schema(const nlohmann::json& tools, std::string_view name) {
  for (const nlohmann::json& tool : tools) {
    const nlohmann::json& function = function_of(tool);
    if (function.value("name", "") == name) return parameters_of(function);
  }
  throw std::invalid_argument("Tool '" + std::string(name) + "' has not been passed in `tools`.");
}

}  // namespace actorllm::tool_calls
