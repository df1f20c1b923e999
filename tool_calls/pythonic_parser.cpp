#include "tool_calls/pythonic_parser.hpp"

namespace actorllm::tool_calls {
namespace {
constexpr std::string_view kPythonStart = "<|python_start|>";
constexpr std::string_view kPythonEnd = "<|python_end|>";

bool is_identifier_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_identifier_char(char c) {
  return is_identifier_start(c) || (c >= '0' && c <= '9');
}
}  // namespace

pythonic_parser::pythonic_parser(tool_parser_options options)
    : tool_call_parser(std::move(options)) {}

// Inside a committed call only this byte and what follows are content; before, all held text.
void pythonic_parser::fail(char c) {
  region_ += c;
  give_up(region_);
}

void pythonic_parser::consume(char c) {
  switch (state_) {
    case state::lead:
      return read_lead(c);
    case state::call_start:
      if (!hold(c) || is_space(c)) return;
      if (!is_identifier_start(c)) return give_up(region_);
      call_name_.assign(1, c);
      state_ = state::call_name;
      return;
    case state::call_name:
      if (!hold(c)) return;
      if (is_identifier_char(c)) {
        call_name_ += c;
        return;
      }
      if (c != '(' || !start_call(call_name_)) return give_up(region_);
      region_.clear();
      emit_arguments("{");
      num_arguments_ = 0;
      state_ = state::argument_start;
      return;
    case state::argument_start:
      if (is_space(c)) return;
      if (c == ')') {
        emit_arguments("}");
        state_ = state::after_call;
        return;
      }
      if (!is_identifier_start(c)) return fail(c);
      keyword_.assign(1, c);
      state_ = state::keyword;
      return;
    case state::keyword:
      if (is_identifier_char(c)) {
        keyword_ += c;
        if (keyword_.size() > limits().max_pending_bytes) fail(c);
        return;
      }
      state_ = state::equals;
      [[fallthrough]];
    case state::equals:
      if (is_space(c)) return;
      if (c != '=') return fail(c);
      {
        std::string key = num_arguments_++ == 0 ? "\"" : ", \"";
        key += keyword_;
        key += "\": ";
        emit_arguments(key);
      }
      value_.emplace(limits().max_depth);
      value_sent_ = 0;
      state_ = state::value;
      return;
    case state::value:
      return read_value(c);
    case state::after_value:
      if (is_space(c)) return;
      if (c == ',') {
        state_ = state::argument_start;
      } else if (c == ')') {
        emit_arguments("}");
        state_ = state::after_call;
      } else {
        fail(c);
      }
      return;
    case state::after_call:
      if (!hold(c) || is_space(c)) return;
      if (c == ',') {
        state_ = state::call_start;
      } else if (c == ']') {
        region_.clear();
        tag_matched_ = 0;
        state_ = state::after_list;
      } else {
        give_up(region_);
      }
      return;
    case state::after_list:
      return read_after_list(c);
  }
}

// Whitespace, an optional <|python_start|> and whitespace, then '['. Each byte is checked
// once, so long whitespace costs linear time.
void pythonic_parser::read_lead(char c) {
  if (!hold(c)) return;
  const bool tag_complete = tag_matched_ == kPythonStart.size();
  if (is_space(c) && (tag_matched_ == 0 || tag_complete)) return;
  if (!tag_complete && c == kPythonStart[tag_matched_]) {
    ++tag_matched_;
    return;
  }
  if (c != '[' || (tag_matched_ > 0 && !tag_complete)) return give_up(region_);
  state_ = state::call_start;
}

// The value's JSON only grows, so it is sent as it is written: a long string streams.
void pythonic_parser::read_value(char c) {
  const python_literal_reader::status s = value_->feed(c);
  if (s == python_literal_reader::status::error) return fail(c);
  emit_arguments(std::string_view(value_->json()).substr(value_sent_));
  value_sent_ = value_->json().size();
  if (s == python_literal_reader::status::more) return;
  state_ = state::after_value;
  if (s == python_literal_reader::status::done_before) consume(c);
}

// After the list only whitespace and <|python_end|> belong to the calls; other text is content
// (without them).
void pythonic_parser::read_after_list(char c) {
  const bool tag_complete = tag_matched_ == kPythonEnd.size();
  if (is_space(c) && (tag_matched_ == 0 || tag_complete)) return;
  if (!tag_complete && c == kPythonEnd[tag_matched_]) {
    region_ += c;
    ++tag_matched_;
    return;
  }
  if (tag_complete) return give_up(std::string_view(&c, 1));
  region_ += c;
  give_up(region_);
}

void pythonic_parser::at_end() {
  switch (state_) {
    case state::lead:
    case state::call_start:
    case state::call_name:
      // Text that never became a call; "[f(a=1), " cut after a call is dropped.
      if (!has_calls() || region_.find_first_not_of(" \n\t\r,") != std::string::npos) {
        emit_content(region_);
      }
      return;
    case state::after_list:
      return;  // whitespace, or a partial <|python_end|>
    default:
      return;  // a call cut by the end of output stays as it is
  }
}

}  // namespace actorllm::tool_calls
