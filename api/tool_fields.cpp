#include "api/tool_fields.hpp"

#include <stdexcept>
#include <utility>

#include "tool_calls/forced_calls_schema.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

/// OpenAI's bounds: at most 128 tools, names of at most 64 of [A-Za-z0-9_-].
constexpr std::size_t max_tools = 128;
constexpr std::size_t max_name_bytes = 64;

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > max_name_bytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

/// Each tool's parameters schema as JSON text, in the client's property order when the raw
/// body is at hand.
std::vector<std::string> parameter_schemas(const json& tools, std::string_view raw_body) {
  std::vector<std::string> out;
  const ordered_json ordered =
      raw_body.empty() ? ordered_json() : ordered_json::parse(raw_body, nullptr, false);
  const ordered_json* ordered_tools = nullptr;
  if (ordered.is_object())
    if (auto it = ordered.find("tools");
        it != ordered.end() && it->is_array() && it->size() == tools.size())
      ordered_tools = &*it;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const json* params = given_field(tools[i]["function"], "parameters");
    if (!params) {
      out.emplace_back(R"({"type":"object"})");
    } else if (ordered_tools) {
      out.push_back((*ordered_tools)[i]["function"]["parameters"].dump());
    } else {
      out.push_back(params->dump());
    }
  }
  return out;
}

std::optional<api_error> read_tools_list(const json* tools, tool_request& out) {
  if (!tools) return std::nullopt;
  if (!tools->is_array()) return bad_request("tools must be a list", "tools");
  if (tools->size() > max_tools)
    return bad_request("at most " + std::to_string(max_tools) + " tools may be given", "tools");
  for (const auto& tool : *tools) {
    const json* type = tool.is_object() ? given_field(tool, "type") : nullptr;
    if (!type || *type != "function")
      return bad_request("each tool must be {\"type\": \"function\", \"function\": {...}}",
                         "tools");
    const json* function = given_field(tool, "function");
    const json* name = function && function->is_object() ? given_field(*function, "name") : nullptr;
    if (!name || !name->is_string() || !valid_name(name->get<std::string>()))
      return bad_request(
          "each tool's function needs a name of 1 to 64 letters, digits, '_', '-' or '.'", "tools");
    if (const json* params = given_field(*function, "parameters");
        params && !params->is_object() && !params->is_boolean())
      return bad_request("a function's parameters must be a JSON schema object", "tools");
    out.names.push_back(name->get<std::string>());
  }
  return std::nullopt;
}

}  // namespace

std::optional<api_error> read_tool_fields(const json& body, std::string_view raw_body,
                                          const tool_settings& settings, tool_request& out,
                                          structured_output& constraint) {
  out = tool_request{};
  const json* tools = given_field(body, "tools");
  if (auto error = read_tools_list(tools, out)) return error;
  if (const json* parallel = given_field(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean())
      return bad_request("parallel_tool_calls must be a boolean", "parallel_tool_calls");
    out.parallel = parallel->get<bool>();
  }
  const json* choice = given_field(body, "tool_choice");
  // As in vLLM, tools without any tool_choice field mean "auto" (an explicit null does not).
  const bool implied = !body.contains("tool_choice") && !out.names.empty();
  if (!choice && !implied) return std::nullopt;
  if (choice && *choice == "none") return std::nullopt;
  if (out.names.empty())
    return bad_request("tool_choice other than \"none\" needs a non-empty tools list",
                       "tool_choice");

  if (implied || *choice == "auto") {
    if (!settings.enable_auto_tool_choice || settings.tool_call_parser.empty())
      return bad_request(std::string(implied ? "tools without tool_choice mean \"auto\"; " : "") +
                             "\"auto\" tool choice requires --enable-auto-tool-choice and "
                             "--tool-call-parser to be set; send tool_choice \"none\" to have "
                             "the tools rendered into the prompt only",
                         "tool_choice");
    out.mode = tool_mode::parse;
    return std::nullopt;
  }

  std::string schema;
  if (*choice == "required") {
    out.mode = tool_mode::forced_required;
    // A non-empty array of {"name", "parameters"}, one of the tools each, with the tools'
    // $defs gathered at the top so that their $refs still resolve.
    try {
      nlohmann::json calls = tool_calls::required_calls_schema(*tools);
      if (!out.parallel) calls["maxItems"] = 1;
      schema = calls.dump();
    } catch (const std::invalid_argument& e) {
      return bad_request(std::string("tool_choice \"required\": ") + e.what(), "tool_choice");
    }
  } else {
    const json* function = choice->is_object() ? given_field(*choice, "function") : nullptr;
    const json* type = choice->is_object() ? given_field(*choice, "type") : nullptr;
    const json* name = function && function->is_object() ? given_field(*function, "name") : nullptr;
    if (!type || *type != "function" || !name || !name->is_string())
      return bad_request(
          "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}",
          "tool_choice");
    out.forced_name = name->get<std::string>();
    std::size_t index = 0;
    while (index < out.names.size() && out.names[index] != out.forced_name) ++index;
    if (index == out.names.size())
      return bad_request(
          "tool_choice names the function '" + out.forced_name + "', which is not among the tools",
          "tool_choice");
    out.mode = tool_mode::forced_named;
    schema = parameter_schemas(*tools, raw_body)[index];
  }
  // A forced call is itself a structured output, and it decides: a response_format (or any
  // other structured output) beside it gives way, as vLLM and OpenAI do (the OpenAI Agents SDK
  // sends both for an agent with an output type and a forced tool).
  constraint = structured_output{};
  constraint.kind = output_constraint::json_schema;
  constraint.source = std::move(schema);
  constraint.field = "tool_choice";
  return std::nullopt;
}

}  // namespace actorllm::api
