#include "tool_calls/hermes_parser.hpp"

namespace actorllm::tool_calls {
namespace {
constexpr std::string_view kStart = "<tool_call>";
constexpr std::string_view kEnd = "</tool_call>";
}  // namespace

hermes_parser::hermes_parser(tool_parser_options options)
    : tool_call_parser(std::move(options)), text_(kStart, limits().max_pending_bytes) {}

void hermes_parser::consume(char c) {
  switch (state_) {
    case state::text:
      return read_text(c);
    case state::before_object:
      if (!hold(c)) return;
      if (is_space(c)) return;
      if (c != '{') return give_up(region_);
      scanner_.emplace(json_call_scanner::mode::call_object, limits().max_depth);
      region_.pop_back();  // read_object holds it again
      return read_object(c);
    case state::object:
      return read_object(c);
    case state::after_object:
      return read_after_object(c);
  }
}

// Appends c to the uncommitted region; false (after giving up) when it grows past the bound.
void hermes_parser::read_text(char c) {
  std::string content;
  const bool found = text_.feed(c, content);
  emit_content(content);
  if (!found) return;
  region_ = text_.take_held_space();
  region_ += kStart;
  committed_ = false;
  early_arguments_.clear();
  state_ = state::before_object;
}

void hermes_parser::read_object(char c) {
  const json_call_step step = read_json_call_byte(*scanner_, committed_, early_arguments_, c);
  if (step == json_call_step::failed) return;
  if (step == json_call_step::done) {
    state_ = state::after_object;
    end_matched_ = 0;
    tail_.clear();
    return;
  }
  state_ = state::object;
}

void hermes_parser::read_after_object(char c) {
  tail_ += c;
  if (end_matched_ == 0 && is_space(c)) {
    if (tail_.size() > limits().max_pending_bytes) give_up(tail_);
    return;
  }
  if (c != kEnd[end_matched_]) return give_up(tail_);
  if (++end_matched_ < kEnd.size()) return;
  state_ = state::text;
  text_.call_ended();
}

void hermes_parser::at_end() {
  switch (state_) {
    case state::text:
      emit_content(text_.end_text());
      return;
    case state::before_object:
    case state::object:
      // A committed call stays, cut where the output ended.
      if (!committed_) emit_content(region_);
      return;
    case state::after_object:
      return;  // the missing </tool_call> is tolerated
  }
}

}  // namespace actorllm::tool_calls
