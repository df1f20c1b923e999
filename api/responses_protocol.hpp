#pragma once
/// POST /v1/responses (OpenAI's Responses API), stateless: the body is translated into the
/// chat completions request it means, which then goes through the chat parser, so every
/// sampling field, tool choice and structured output behaves as in chat.
///
///   instructions                 -> a leading system message
///   input (text)                 -> one user message
///   input items: messages        -> messages (input_text / output_text parts joined)
///                function_call   -> an assistant message's tool_calls (consecutive ones merged)
///                function_call_output -> a tool message
///   tools [{type: function, name, description, parameters}] -> chat tools
///   tool_choice, parallel_tool_calls, temperature, top_p, seed, stream -> the same
///   max_output_tokens            -> max_tokens
///   text.format (text, json_object, json_schema {name, schema, strict}) -> response_format
///
/// Nothing is stored: `store` is accepted, and `previous_response_id` (which needs a stored
/// response) is a 400 naming it. Other tool types (web_search, file_search, ...) are 400s.
#include <optional>
#include <string_view>

#include "api/openai_protocol.hpp"

namespace actorllm::api {

std::optional<api_error> parse_responses_request(std::string_view body, openai_request& out,
                                                 const sampling_defaults& defaults = {},
                                                 const tool_settings& tools = {});

}  // namespace actorllm::api
