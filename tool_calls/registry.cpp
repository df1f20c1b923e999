#include "tool_calls/registry.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "tool_calls/hermes_parser.hpp"
#include "tool_calls/llama3_json_parser.hpp"
#include "tool_calls/mistral_parser.hpp"
#include "tool_calls/pythonic_parser.hpp"

namespace actorllm::tool_calls {
namespace {

constexpr std::array<std::string_view, 4> kToolCallParsers = {"hermes", "llama3_json", "mistral",
                                                              "pythonic"};
constexpr std::array<std::string_view, 2> kReasoningParsers = {"deepseek_r1", "qwen3"};

std::optional<std::string> check_name(std::string_view kind, std::string_view name,
                                      std::span<const std::string_view> known) {
  if (std::find(known.begin(), known.end(), name) != known.end()) return std::nullopt;
  std::string message = "unknown " + std::string(kind) + " \"" + std::string(name) + "\"; known: ";
  for (std::size_t i = 0; i < known.size(); ++i) {
    if (i > 0) message += ", ";
    message += known[i];
  }
  return message;
}

}  // namespace

std::span<const std::string_view> tool_call_parser_names() {
  return kToolCallParsers;
}
std::span<const std::string_view> reasoning_parser_names() {
  return kReasoningParsers;
}

std::optional<std::string> check_tool_call_parser_name(std::string_view name) {
  return check_name("tool call parser", name, kToolCallParsers);
}

std::optional<std::string> check_reasoning_parser_name(std::string_view name) {
  return check_name("reasoning parser", name, kReasoningParsers);
}

std::unique_ptr<tool_call_parser> make_tool_call_parser(std::string_view name,
                                                        tool_parser_options options) {
  if (name == "hermes") return std::make_unique<hermes_parser>(std::move(options));
  if (name == "llama3_json") return std::make_unique<llama3_json_parser>(std::move(options));
  if (name == "mistral") return std::make_unique<mistral_parser>(std::move(options));
  if (name == "pythonic") return std::make_unique<pythonic_parser>(std::move(options));
  throw std::invalid_argument(*check_tool_call_parser_name(name));
}

std::unique_ptr<reasoning_parser> make_reasoning_parser(std::string_view name,
                                                        bool starts_in_reasoning) {
  if (std::find(kReasoningParsers.begin(), kReasoningParsers.end(), name) !=
      kReasoningParsers.end()) {
    return std::make_unique<reasoning_parser>(name, starts_in_reasoning);
  }
  throw std::invalid_argument(*check_reasoning_parser_name(name));
}

}  // namespace actorllm::tool_calls
