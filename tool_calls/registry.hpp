#pragma once
/// Parsers by the names vLLM gives them (--tool-call-parser, --reasoning-parser).
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tool_calls/reasoning_parser.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

/// hermes, llama3_json, mistral, pythonic.
std::span<const std::string_view> tool_call_parser_names();
/// deepseek_r1, qwen3.
std::span<const std::string_view> reasoning_parser_names();

/// nullopt for a known name; otherwise the message for the user, listing the known names
/// (for config validation: unknown tool call parser "x"; known: hermes, llama3_json, ...).
std::optional<std::string> check_tool_call_parser_name(std::string_view name);
std::optional<std::string> check_reasoning_parser_name(std::string_view name);

/// A fresh parser for one output (parsers keep per-output state). Throws
/// std::invalid_argument with the check_ message for an unknown name.
std::unique_ptr<tool_call_parser> make_tool_call_parser(std::string_view name,
                                                        tool_parser_options options);
std::unique_ptr<reasoning_parser> make_reasoning_parser(std::string_view name,
                                                        bool starts_in_reasoning);

}  // namespace actorllm::tool_calls
