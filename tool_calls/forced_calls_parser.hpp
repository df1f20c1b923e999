#pragma once
/// Outputs forced by tool_choice through the structured-output engine, read as vLLM reads
/// them (schemas in forced_calls_schema.hpp):
///   required: a JSON array of {"name": ..., "parameters": {...}} objects, every one a call;
///   a named function: the whole output is that function's arguments object.
/// Both stream like the other parsers: a call is sent once its name is known and its
/// arguments have begun, then its arguments in pieces.
#include <optional>

#include "tool_calls/json_call_scanner.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

class required_calls_parser final : public tool_call_parser {
 public:
  explicit required_calls_parser(tool_parser_options options);
  std::string_view name() const override { return "required"; }

 private:
  enum class state { before_list, list_item, object, after_item, after_list };
  void consume(char c) override;
  void at_end() override;
  void read_object(char c);

  state state_ = state::before_list;
  std::string early_arguments_;
  bool committed_ = false;
  std::optional<json_call_scanner> scanner_;
};

class named_call_parser final : public tool_call_parser {
 public:
  named_call_parser(std::string function_name, tool_parser_options options);
  std::string_view name() const override { return "named"; }

 private:
  void consume(char c) override;
  void at_end() override {}

  std::string function_name_;
  bool started_ = false;
  std::string leading_space_;
};

}  // namespace actorllm::tool_calls
