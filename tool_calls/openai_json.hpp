#pragma once
/// The OpenAI chat JSON of calls and streamed call deltas.
#include <nlohmann/json.hpp>

#include "tool_calls/tool_call_types.hpp"

namespace actorllm::tool_calls {

/// {"id", "type": "function", "function": {"name", "arguments"}} (message.tool_calls[i]).
nlohmann::json to_openai_json(const tool_call& call);

/// delta.tool_calls[i] for a call_start ({"index", "id", "type": "function", "function":
/// {"name", "arguments": ""}}) or a call_arguments event ({"index", "function":
/// {"arguments"}}). A content event has no tool-call form: the caller sends delta.content.
nlohmann::json to_openai_delta(const stream_event& event);

}  // namespace actorllm::tool_calls
