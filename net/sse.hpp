#pragma once
/// Server-sent events as OpenAI frames them: `data: {json}\n\n`, ended by `data: [DONE]`;
/// and as Anthropic's Messages API does, every event named: `event: name\ndata: {json}\n\n`.
#include <string>
#include <string_view>

namespace actorllm::net {

/// Appends one event carrying `chunk` to `out`: a single line of JSON text, or a named chunk
/// (api::named_chunk: the event's name, a newline, the JSON), which is sent with its name.
inline void append_sse_event(std::string& out, std::string_view chunk) {
  if (const auto newline = chunk.find('\n'); newline != std::string_view::npos) {
    out.append("event: ").append(chunk.substr(0, newline)).append("\n");
    chunk.remove_prefix(newline + 1);
  }
  out.append("data: ").append(chunk).append("\n\n");
}

/// Appends the terminating event.
inline void append_sse_done(std::string& out) {
  out.append("data: [DONE]\n\n");
}

}  // namespace actorllm::net
