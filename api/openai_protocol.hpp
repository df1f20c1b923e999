#pragma once
/// OpenAI request bodies -> generate_request, and OpenAI error objects. Pure functions:
/// no sockets, no engine. A wrong type or range is an api_error naming the parameter.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_request.hpp"
#include "common/generate_request.hpp"
#include "common/sampling_defaults.hpp"

namespace actorllm::api {

/// responses: POST /v1/responses, and messages: POST /v1/messages (Anthropic's), each a chat
/// underneath (responses_protocol.hpp, anthropic_protocol.hpp).
enum class api_kind : uint8_t { completion, chat, responses, messages };

/// An error as OpenAI reports it: {"error": {"message", "type", "param", "code"}} with an
/// HTTP status. Empty param / code are sent as null.
struct api_error {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;
  std::string code;
};

api_error bad_request(std::string message, std::string param = {});
api_error not_found(std::string message, std::string code = "not_found");
api_error internal_error(std::string message);
/// Maps an engine-side failure (request_output::error / error_status) to an api_error.
/// `param`: the request field the engine blamed, if any (client errors only).
api_error engine_error(const std::string& message, int32_t status, const std::string& param = {});
/// The JSON object {"error": {...}} of an error, as text.
std::string error_json(const api_error& error);
nlohmann::json error_object(const api_error& error);

/// What a Responses call carries beside the chat it means (responses_protocol.hpp).
struct responses_fields {
  bool store = true;        ///< keep the finished response (response_store.hpp)
  bool background = false;  ///< answer at once; the generation runs on (background_responses.hpp)
  std::string previous_response_id;  ///< empty: none
  /// The input items of the whole conversation, each with an "id": the previous response's
  /// input items and output items, then this request's input. Stored with the answer.
  nlohmann::json input_items = nlohmann::json::array();
  /// The request's fields that the Response object repeats (store, background,
  /// previous_response_id, instructions, tools, tool_choice, text, temperature, top_p,
  /// max_output_tokens, parallel_tool_calls, metadata, user), as given.
  nlohmann::json echo = nlohmann::json::object();
};

/// A parsed /v1/completions or /v1/chat/completions call. A completions call with a list of
/// prompts fans out into one generate_request per prompt; choice index of sample s of
/// prompt p is p * n + s.
struct openai_request {
  api_kind kind = api_kind::completion;
  std::string model;  ///< as asked; empty when the client left it out
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage_stats = false;  ///< vLLM's: with include_usage, usage in every chunk
  int32_t n = 1;
  /// vLLM's prompt_logprobs was asked for by name (echo asks for the prompt's logprobs too,
  /// but answers them in the legacy logprobs object).
  bool prompt_logprobs = false;
  std::vector<generate_request> prompts;  ///< request_id and model left for the caller
  tool_request tools;                     ///< chat: what to make of the model's tool calls
  bool thinking = false;                  ///< messages: thinking blocks asked for
  responses_fields responses;             ///< api_kind::responses
};

/// Nesting depth past which a body is refused (keeps recursion in the JSON library bounded).
inline constexpr int max_json_depth = 64;

/// The field `key` of a JSON object, or null when it is missing or null: several clients send
/// null for "not given", so the parsers treat the two alike.
const nlohmann::json* given_field(const nlohmann::json& object, const char* key);
const nlohmann::ordered_json* given_field(const nlohmann::ordered_json& object, const char* key);

/// Parses an HTTP body. On failure returns the error and leaves `out` unspecified.
/// Sampling fields the body leaves out take `defaults` (the model's), else OpenAI's.
std::optional<api_error> parse_openai_request(std::string_view body, api_kind kind,
                                              openai_request& out,
                                              const sampling_defaults& defaults = {},
                                              const tool_settings& tools = {});
/// Same from JSON already parsed (a WebSocket message); unknown fields are ignored.
/// `raw_body`, the text it was parsed from when the caller has it, keeps a JSON schema's
/// property order (structured_output_fields.hpp).
std::optional<api_error> parse_openai_json(const nlohmann::json& body, api_kind kind,
                                           openai_request& out,
                                           const sampling_defaults& defaults = {},
                                           std::string_view raw_body = {},
                                           const tool_settings& tools = {});

/// /tokenize: {"prompt": "..."} (add_special_tokens) or {"messages": [...]}
/// (add_generation_prompt) into a text or chat generate_request.
std::optional<api_error> parse_tokenize_request(std::string_view body, generate_request& out);
/// /detokenize: {"tokens": [ids], "model"?: name}.
std::optional<api_error> parse_detokenize_request(std::string_view body, detokenize_request& out);

/// The deepest nesting of arrays and objects in JSON text (strings skipped), without parsing:
/// what is checked before text is parsed, so that no parse or destruction recurses too deep.
int json_depth(std::string_view text);

/// Parses JSON text with a depth limit; returns an error for bad JSON or a non-object.
std::optional<api_error> parse_json_object(std::string_view body, nlohmann::json& out);

}  // namespace actorllm::api
