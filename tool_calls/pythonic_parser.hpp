#pragma once
/// vLLM's "pythonic" format (Llama 3.2 / Llama 4 and others prompted for it): the whole output
/// is a Python list of calls with keyword arguments,
///   [get_weather(city="Paris", days=3), get_time(zone='CET', exact=True)]
/// optionally inside Llama 4's <|python_start|> ... <|python_end|>. Arguments are written as
/// JSON in json.dumps' style ({"city": "Paris", "days": 3}) and streamed as they are read
/// (a number or True/False/None when it ends, strings as they come). As in vLLM, an output that
/// does not begin with the list is content. Where vLLM refuses a list followed by other text, we
/// keep the calls and return that text as content (streamed calls cannot be taken back).
#include <optional>

#include "tool_calls/python_literal.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

class pythonic_parser final : public tool_call_parser {
 public:
  explicit pythonic_parser(tool_parser_options options);
  std::string_view name() const override { return "pythonic"; }

 private:
  enum class state {
    lead,        // whitespace and <|python_start|> before '['
    call_start,  // after '[' or ',': a function name comes
    call_name,
    argument_start,  // after '(' or ',': a keyword or ')'
    keyword,
    equals,  // after the keyword, before '='
    value,
    after_value,  // ',' or ')'
    after_call,   // ',' or ']'
    after_list,   // whitespace and <|python_end|>
  };
  void consume(char c) override;
  void at_end() override;
  void read_lead(char c);
  void read_value(char c);
  void read_after_list(char c);
  void fail(char c);

  state state_ = state::lead;
  std::string call_name_;
  std::string keyword_;
  std::size_t num_arguments_ = 0;
  std::size_t tag_matched_ = 0;  // bytes of <|python_start|> or <|python_end|> read
  std::optional<python_literal_reader> value_;
  std::size_t value_sent_ = 0;  // bytes of the value's JSON already sent
};

}  // namespace actorllm::tool_calls
