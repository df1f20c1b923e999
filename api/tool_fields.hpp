#pragma once
/// A chat request's `tools`, `tool_choice` and `parallel_tool_calls`, read into what the
/// answer must do with the model's output:
///   - none: plain content (the tools still reach the chat template);
///   - parse ("auto", or tools without tool_choice): the server's --tool-call-parser turns
///     the calls the model writes into tool_calls; without --enable-auto-tool-choice this is a
///     400 naming the flags, as vLLM answers;
///   - forced_named ({"type": "function", "function": {"name": N}}): the output is N's
///     arguments, held to its parameters schema by structured output;
///   - forced_required ("required"): the output is a JSON array of {"name", "parameters"},
///     one of the tools each, held to that shape by structured output.
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "api/openai_protocol.hpp"
#include "api/tool_request.hpp"
#include "common/structured_output.hpp"

namespace actorllm::api {

/// Reads the fields; a forced choice also fills `constraint`, replacing any other structured
/// output the request asks for (the forced call's schema decides the output). `raw_body` (when
/// given) keeps the parameters schemas' property order, as in structured_output_fields.hpp.
std::optional<api_error> read_tool_fields(const nlohmann::json& body, std::string_view raw_body,
                                          const tool_settings& settings, tool_request& out,
                                          structured_output& constraint);

}  // namespace actorllm::api
