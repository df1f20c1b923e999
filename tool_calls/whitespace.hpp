#pragma once

namespace actorllm::tool_calls {

/// Whether c is JSON / Python whitespace (space, newline, tab, carriage return).
inline bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

}  // namespace actorllm::tool_calls
