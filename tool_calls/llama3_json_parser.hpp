#pragma once
/// vLLM's "llama3_json" format (Llama 3.1-3.3 with JSON tool calling): the output is a call
/// object, optionally after <|python_tag|>, with "parameters" (or "arguments"):
///   <|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}
/// and several calls separated by ';'. As in vLLM's streaming path, calls are recognised only
/// at the start of the output (leading whitespace allowed); any other output is content. vLLM's
/// whole-text path also finds an object later in the text and drops the text around it; we keep
/// the streaming rule for both, so they agree.
#include <optional>

#include "tool_calls/json_call_scanner.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

class llama3_json_parser final : public tool_call_parser {
 public:
  explicit llama3_json_parser(tool_parser_options options);
  std::string_view name() const override { return "llama3_json"; }

 private:
  enum class state { lead, before_object, object, after_object };
  void consume(char c) override;
  void at_end() override;
  void read_lead(char c);
  void read_object(char c);

  state state_ = state::lead;
  std::string early_arguments_;
  bool committed_ = false;
  std::size_t tag_matched_ = 0;  // bytes of <|python_tag|> read
  std::optional<json_call_scanner> scanner_;
};

}  // namespace actorllm::tool_calls
