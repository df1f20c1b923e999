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
bool hermes_parser::hold(char c) {
  region_ += c;
  if (region_.size() <= limits().max_pending_bytes) return true;
  give_up(region_);
  return false;
}

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
  if (!committed_ && !hold(c)) return;
  const json_call_scanner::byte_result r = scanner_->feed(c);
  if (r.state == json_call_scanner::status::error) {
    return give_up(committed_ ? std::string_view(&c, 1) : std::string_view(region_));
  }
  if (r.in_arguments) {
    if (committed_) {
      emit_arguments(std::string_view(&c, 1));
    } else {
      early_arguments_ += c;
    }
  }
  if (!committed_ && scanner_->name() && scanner_->arguments_started()) {
    if (!start_call(*scanner_->name())) return give_up(region_);
    emit_arguments(early_arguments_);
    committed_ = true;
    region_.clear();
  }
  if (r.state == json_call_scanner::status::done) {
    // An object that ended without both a name and arguments is not a call.
    if (!committed_) return give_up(region_);
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
