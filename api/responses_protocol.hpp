#pragma once
/// POST /v1/responses (OpenAI's Responses API): the body is translated into the
/// chat completions request it means, which then goes through the chat parser, so every
/// sampling field, tool choice and structured output behaves as in chat.
///
///   instructions                 -> a leading system message
///   input (text)                 -> one user message
///   input items: messages        -> messages (input_text / output_text parts joined;
///                                   input_image {image_url, detail} parts as chat's image_url
///                                   parts, chat_content.hpp; file_id or input_file: a 400)
///                function_call   -> an assistant message's tool_calls (consecutive ones merged)
///                function_call_output -> a tool message
///   tools [{type: function, name, description, parameters}] -> chat tools
///   tool_choice, parallel_tool_calls, temperature, top_p, seed, stream -> the same
///   max_output_tokens            -> max_tokens
///   text.format (text, json_object, json_schema {name, schema, strict}) -> response_format
///
///   store, background, previous_response_id -> responses_fields (openai_protocol.hpp)
///
/// previous_response_id continues a stored response: the conversation is its input items,
/// its output items, then this input (its `instructions` are not carried over, as in
/// OpenAI's API). A malformed id is a 400, an unknown one a 404
/// (previous_response_not_found), one still running a 400, each naming the field.
/// `background` needs `store` and is never streamed (400s naming them). Other tool types
/// (web_search, file_search, ...) are 400s.
#include <functional>
#include <optional>
#include <string_view>

#include "api/openai_protocol.hpp"
#include "api/response_store.hpp"

namespace actorllm::api {

/// The stored response of an id (response_store::get), or nullopt when there is none.
using response_lookup = std::function<std::optional<stored_response>(std::string_view id)>;

/// `lookup` answers previous_response_id (empty: no response is stored, every id unknown).
std::optional<api_error> parse_responses_request(std::string_view body, openai_request& out,
                                                 const sampling_defaults& defaults = {},
                                                 const tool_settings& tools = {},
                                                 const response_lookup& lookup = {});

/// `input` (text, or a list of items) as the list of items it stands for, each with an "id"
/// (a fresh one where it has none): text is one user message with an input_text part, and a
/// message whose content is text gets it as one part. What is not a list of objects is
/// returned unchanged, for the translation to refuse.
nlohmann::ordered_json input_items_of(const nlohmann::ordered_json& input);

}  // namespace actorllm::api
