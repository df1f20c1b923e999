#pragma once
/// vLLM's "hermes" format (Hermes 2 Pro, Qwen2.5, Qwen3): each call is
///   <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>
/// anywhere in the output. The text before the first call is content, as in vLLM; text after a
/// call that is not whitespace is content too (vLLM drops it when not streaming). A missing
/// final </tool_call> is accepted, as vLLM's pattern does.
#include <optional>

#include "tool_calls/json_call_scanner.hpp"
#include "tool_calls/marker_finder.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

class hermes_parser final : public tool_call_parser {
 public:
  explicit hermes_parser(tool_parser_options options);
  std::string_view name() const override { return "hermes"; }

 private:
  enum class state { text, before_object, object, after_object };
  void consume(char c) override;
  void at_end() override;
  void read_text(char c);
  void read_object(char c);
  void read_after_object(char c);

  state state_ = state::text;
  text_between_calls text_;
  std::string early_arguments_;  // arguments read before the name
  bool committed_ = false;
  std::optional<json_call_scanner> scanner_;
  std::size_t end_matched_ = 0;  // bytes of "</tool_call>" matched
  std::string tail_;             // whitespace and end marker after the object
};

}  // namespace actorllm::tool_calls
