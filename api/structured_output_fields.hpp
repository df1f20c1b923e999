#pragma once
/// The request fields that ask for structured output, read into one structured_output:
///   - OpenAI's response_format: {"type": "text" | "json_object"} or
///     {"type": "json_schema", "json_schema": {"name", "schema", "strict"}};
///   - vLLM's structured_outputs object: exactly one of json, regex, choice, grammar,
///     json_object, with disable_any_whitespace;
///   - vLLM's older guided_json, guided_regex, guided_choice, guided_grammar.
/// A request names at most one constraint. What is read here is only the shape; whether a
/// schema, regex or grammar compiles is the engine's check (it knows the vocabulary).
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "api/openai_protocol.hpp"
#include "common/structured_output.hpp"

namespace actorllm::api {

/// `raw_body`: the body's text, when the caller has it. nlohmann::json sorts an object's keys,
/// and a schema's properties are written in the order the client gave them, so a schema is
/// taken from the text reread in order (from `body` sorted when there is no text).
std::optional<api_error> read_structured_output(const nlohmann::json& body,
                                                std::string_view raw_body, structured_output& out);

}  // namespace actorllm::api
