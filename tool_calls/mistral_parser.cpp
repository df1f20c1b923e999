#include "tool_calls/mistral_parser.hpp"

#include <utility>

namespace actorllm::tool_calls {
namespace {
constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";
constexpr std::string_view kCallId = "[CALL_ID]";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}
}  // namespace

mistral_parser::mistral_parser(tool_parser_options options)
    : tool_call_parser(std::move(options)), text_(kToolCalls, limits().max_pending_bytes) {}

std::string mistral_parser::next_call_id() {
  if (!call_id_.empty()) return std::exchange(call_id_, {});
  return ids().next_mistral_id();
}

void mistral_parser::start_scanner(json_call_scanner::mode m) {
  scanner_.emplace(m, limits().max_depth);
  committed_ = false;
  early_arguments_.clear();
}

void mistral_parser::consume(char c) {
  switch (state_) {
    case state::text:
      return read_text(c);
    case state::after_marker:
      if (!hold(c) || is_space(c)) return;
      if (c == '[') {
        state_ = state::list_item;
      } else if (is_name_char(c)) {
        name_.assign(1, c);
        state_ = state::call_name;
      } else {
        give_up(region_);
      }
      return;
    case state::list_item:
      if (!hold(c) || is_space(c)) return;
      if (c != '{') return give_up(region_);
      start_scanner(json_call_scanner::mode::call_object);
      region_.pop_back();  // read_object holds it again
      return read_object(c);
    case state::object:
      return read_object(c);
    case state::after_item:
      if (!hold(c) || is_space(c)) return;
      if (c == ',') {
        state_ = state::list_item;
      } else if (c == ']') {
        region_.clear();
        state_ = state::text;
        text_.call_ended();
      } else {
        give_up(region_);
      }
      return;
    case state::call_name:
      if (!hold(c)) return;
      if (!tag_.empty()) return read_tag(c);
      if (is_name_char(c)) {
        name_ += c;
        return;
      }
      if (c != '[') return give_up(region_);
      tag_.assign(1, c);
      return;
    case state::call_id:
      if (!hold(c)) return;
      if (is_name_char(c) && tag_.empty()) {
        call_id_ += c;
        return;
      }
      return read_tag(c);
    case state::before_arguments:
      if (!hold(c) || is_space(c)) return;
      if (c != '{' && c != '[') return give_up(region_);
      start_scanner(json_call_scanner::mode::arguments_value);
      if (!start_call(name_)) return give_up(region_);
      committed_ = true;
      region_.clear();
      return read_arguments(c);
    case state::arguments:
      return read_arguments(c);
  }
}

void mistral_parser::read_text(char c) {
  std::string content;
  const bool found = text_.feed(c, content);
  emit_content(content);
  if (!found) return;
  region_ = text_.take_held_space();
  region_ += kToolCalls;
  call_id_.clear();
  state_ = state::after_marker;
}

// A tag after the name: "[ARGS]", or "[CALL_ID]" then the id then "[ARGS]".
void mistral_parser::read_tag(char c) {
  tag_ += c;
  if (tag_ == kArgs) {
    tag_.clear();
    state_ = state::before_arguments;
    return;
  }
  if (tag_ == kCallId && state_ == state::call_name) {
    tag_.clear();
    call_id_.clear();
    state_ = state::call_id;
    return;
  }
  const bool may_continue =
      kArgs.starts_with(tag_) || (state_ == state::call_name && kCallId.starts_with(tag_));
  if (!may_continue || (state_ == state::call_id && call_id_.empty())) give_up(region_);
}

void mistral_parser::read_object(char c) {
  const json_call_step step = read_json_call_byte(*scanner_, committed_, early_arguments_, c);
  if (step == json_call_step::failed) return;
  if (step == json_call_step::done) {
    state_ = state::after_item;
    return;
  }
  state_ = state::object;
}

void mistral_parser::read_arguments(char c) {
  const json_call_scanner::byte_result r = scanner_->feed(c);
  if (r.state == json_call_scanner::status::error) return give_up(std::string_view(&c, 1));
  emit_arguments(std::string_view(&c, 1));
  if (r.state == json_call_scanner::status::done) {
    state_ = state::text;
    text_.call_ended();
    return;
  }
  state_ = state::arguments;
}

void mistral_parser::at_end() {
  switch (state_) {
    case state::text:
      emit_content(text_.end_text());
      return;
    case state::object:
    case state::arguments:
      if (!committed_) emit_content(region_);
      return;
    case state::after_item:
    case state::list_item:
      // Inside the list after a call: the missing ']' is tolerated.
      if (!has_calls() || region_.find_first_not_of(" \n\t\r,") != std::string::npos) {
        emit_content(region_);
      }
      return;
    default:
      emit_content(region_);
      return;
  }
}

}  // namespace actorllm::tool_calls
