#pragma once
/// Server-sent events as OpenAI frames them: `data: {json}\n\n`, ended by `data: [DONE]`.
#include <string>
#include <string_view>

namespace actorllm::net {

/// Appends one event carrying `json` (a single line of JSON text) to `out`.
inline void append_sse_event(std::string& out, std::string_view json) {
  out.append("data: ").append(json).append("\n\n");
}

/// Appends the terminating event.
inline void append_sse_done(std::string& out) {
  out.append("data: [DONE]\n\n");
}

}  // namespace actorllm::net
