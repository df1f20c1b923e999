#pragma once
/// vLLM's "mistral" format, in both of Mistral's forms:
///   [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {...}]
///       (Mistral 7B v0.3, Nemo: a JSON list after the marker)
///   [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]other[ARGS]{...}
///       (tokenizer v11 and later, e.g. Mistral Small 3.1+; v13 may put [CALL_ID]id before
///       [ARGS], and that id is kept)
/// The text before the first [TOOL_CALLS] is content, as in vLLM. Ids are 9 letters and
/// digits: Mistral's chat template refuses any other id when the call is sent back.
#include <optional>

#include "tool_calls/json_call_scanner.hpp"
#include "tool_calls/marker_finder.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

class mistral_parser final : public tool_call_parser {
 public:
  explicit mistral_parser(tool_parser_options options);
  std::string_view name() const override { return "mistral"; }

 private:
  enum class state {
    text,
    after_marker,  // [TOOL_CALLS] read: a list or a name follows
    list_item,     // before an object in the list
    object,
    after_item,  // after an object: ',' or ']'
    call_name,   // name[ARGS] form: the name, then a [..] tag
    call_id,     // after [CALL_ID]
    before_arguments,
    arguments,
  };
  void consume(char c) override;
  void at_end() override;
  std::string next_call_id() override;
  void read_text(char c);
  void read_object(char c);
  void read_tag(char c);
  void read_arguments(char c);
  void start_scanner(json_call_scanner::mode m);

  state state_ = state::text;
  text_between_calls text_;
  std::string early_arguments_;
  bool committed_ = false;
  std::optional<json_call_scanner> scanner_;
  std::string name_;
  std::string tag_;      // a "[ARGS]" or "[CALL_ID]" tag being read
  std::string call_id_;  // the model's own id ([CALL_ID]), used for the next call
};

}  // namespace actorllm::tool_calls
