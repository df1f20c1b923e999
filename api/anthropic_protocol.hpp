#pragma once
/// POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API), stateless: the
/// body is translated into the chat completions request it means, which then goes through the
/// chat parser, so the chat template, sampling, tool parsing and forced tools are chat's.
///
///   system (text or text blocks)  -> a leading system message
///   messages: user text blocks    -> a user message (blocks joined by "\n")
///             user image blocks   -> image_url parts of that message (chat_content.hpp):
///                                    source {"type": "base64", "media_type": image/jpeg, png,
///                                    gif or webp, "data"} as data:<media_type>;base64,<data>,
///                                    {"type": "url", "url"} as its URL; a bad source is a
///                                    400 naming the block (messages.N.content.M.source...)
///             tool_result         -> a tool message (tool_call_id = tool_use_id; content text
///                                    or text blocks)
///             assistant text      -> an assistant message's content
///             tool_use            -> its tool_calls (arguments: `input`)
///             thinking            -> its reasoning_content (redacted_thinking is dropped)
///   tools [{name, description, input_schema}] -> chat tools ({"type": "custom"} or untyped)
///   tool_choice auto / any / tool {name} / none -> "auto" / "required" / the named function /
///             "none"; disable_parallel_tool_use -> parallel_tool_calls false
///   max_tokens (required), stop_sequences, temperature ([0, 1]), top_p, top_k, stream
///   thinking {"type": "enabled", "budget_tokens": N} (N >= 1024, < max_tokens) -> thinking
///             blocks from the server's --reasoning-parser (none on a server without one) and
///             the template's enable_thinking;
///             {"type": "disabled"} or none: enable_thinking false, no thinking blocks. The
///             budget is checked, not enforced: max_tokens bounds thinking and answer together.
///   metadata (an object) is accepted and unused.
///
/// Refused with a 400 that names the field: image blocks outside a user message's content
/// (in system, a tool_result or an assistant turn), any other block
/// type, server tools (web_search_..., bash_..., any typed tool but "custom"), a last message
/// from the assistant (a prefill the chat template cannot continue), and sizes past the bounds
/// below.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/openai_protocol.hpp"

namespace actorllm::api {

/// Bounds on what a client sends beyond the body limit: Anthropic's own 100,000 messages, and
/// ours on the content blocks of one message (or of system) and on the stop sequences.
inline constexpr std::size_t max_anthropic_messages = 100000;
inline constexpr std::size_t max_content_blocks = 4096;
inline constexpr std::size_t max_stop_sequences = 64;

/// A /v1/messages body into the chat call it means (out.kind = api_kind::messages).
std::optional<api_error> parse_messages_request(std::string_view body, openai_request& out,
                                                const sampling_defaults& defaults = {},
                                                const tool_settings& tools = {});

/// A /v1/messages/count_tokens body into the prompt /v1/messages would build from it (the same
/// translation and checks, without max_tokens, sampling or a tool choice, which shape the
/// answer and not the prompt): the request to tokenize.
std::optional<api_error> parse_count_tokens_request(std::string_view body, generate_request& out);

/// Anthropic's error object, {"type": "error", "error": {"type", "message"}}, and the status
/// it travels with: 400 invalid_request_error, 401 authentication_error, 403 permission_error,
/// 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error, and 529
/// overloaded_error for a 503 (engine not ready, queue full). Other 4xx keep their status as
/// invalid_request_error.
int anthropic_status(int status);
nlohmann::json anthropic_error_object(const api_error& error);

}  // namespace actorllm::api
