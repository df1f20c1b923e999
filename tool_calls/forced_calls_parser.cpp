#include "tool_calls/forced_calls_parser.hpp"

namespace actorllm::tool_calls {

required_calls_parser::required_calls_parser(tool_parser_options options)
    : tool_call_parser(std::move(options)) {}

void required_calls_parser::consume(char c) {
  switch (state_) {
    case state::before_list:
      if (!hold(c) || is_space(c)) return;
      if (c != '[') return give_up(region_);
      state_ = state::list_item;
      return;
    case state::list_item:
      if (!hold(c) || is_space(c)) return;
      if (c != '{') return give_up(region_);
      region_.pop_back();  // read_object holds it again
      scanner_.emplace(json_call_scanner::mode::call_object, limits().max_depth);
      committed_ = false;
      early_arguments_.clear();
      return read_object(c);
    case state::object:
      return read_object(c);
    case state::after_item:
      if (!hold(c) || is_space(c)) return;
      if (c == ',') {
        state_ = state::list_item;
      } else if (c == ']') {
        region_.clear();
        state_ = state::after_list;
      } else {
        give_up(region_);
      }
      return;
    case state::after_list:
      // Only whitespace may follow the list; anything else is content.
      if (!is_space(c)) give_up(std::string_view(&c, 1));
      return;
  }
}

void required_calls_parser::read_object(char c) {
  const json_call_step step = read_json_call_byte(*scanner_, committed_, early_arguments_, c);
  if (step == json_call_step::failed) return;
  if (step == json_call_step::done) {
    state_ = state::after_item;
    return;
  }
  state_ = state::object;
}

void required_calls_parser::at_end() {
  if (state_ == state::object && committed_) return;
  if (state_ == state::after_list) return;
  if (has_calls() && region_.find_first_not_of(" \n\t\r,") == std::string::npos) return;
  emit_content(region_);
}

named_call_parser::named_call_parser(std::string function_name, tool_parser_options options)
    : tool_call_parser(std::move(options)), function_name_(std::move(function_name)) {}

// Leading whitespace is not part of the arguments; from the first other byte on, all is.
void named_call_parser::consume(char c) {
  if (!started_) {
    if (is_space(c) && leading_space_.size() < limits().max_pending_bytes) {
      leading_space_ += c;
      return;
    }
    started_ = true;
    if (!start_call(function_name_)) return give_up(leading_space_ + c);
  }
  emit_arguments(std::string_view(&c, 1));
}

}  // namespace actorllm::tool_calls
