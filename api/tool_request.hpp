#pragma once
/// What a chat request asks of the model's tool calls (read by tool_fields.hpp), and the
/// server's tool-call settings. Plain data.
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm::api {

enum class tool_mode : uint8_t { none, parse, forced_named, forced_required };

struct tool_request {
  tool_mode mode = tool_mode::none;
  std::vector<std::string> names;  ///< the function names offered, in order
  std::string forced_name;         ///< forced_named: the function
  bool parallel = true;            ///< parallel_tool_calls: more than one call per answer
};

/// The server's side: --enable-auto-tool-choice and --tool-call-parser.
struct tool_settings {
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;  ///< empty: none
};

}  // namespace actorllm::api
