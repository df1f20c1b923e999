#pragma once
/// The JSON Schemas that force a tool_choice through the structured-output engine, as vLLM
/// builds them from the request's `tools` (OpenAI chat form: [{"type": "function",
/// "function": {"name", "parameters"}}]).
#include <nlohmann/json.hpp>
#include <string_view>

namespace actorllm::tool_calls {

/// tool_choice "required": {"type": "array", "minItems": 1, "items": {"type": "object",
/// "anyOf": [one {"properties": {"name": {"type": "string", "enum": [name]}, "parameters":
/// schema}, "required": ["name", "parameters"]} per tool]}}, the tools' "$defs" gathered at
/// the top. A tool without parameters gets {"type": "object", "properties": {}}. Throws
/// std::invalid_argument when two tools define one $defs name differently (a 400).
nlohmann::json required_calls_schema(const nlohmann::json& tools);

/// tool_choice {"type": "function", "function": {"name"}}: that tool's parameters schema.
/// Throws std::invalid_argument naming the tool when `tools` lacks it (a 400).
nlohmann::json named_call_schema(const nlohmann::json& tools, std::string_view name);

}  // namespace actorllm::tool_calls
