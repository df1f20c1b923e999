#include "tool_calls/llama3_json_parser.hpp"

namespace actorllm::tool_calls {
namespace {
constexpr std::string_view kPythonTag = "<|python_tag|>";
}  // namespace

llama3_json_parser::llama3_json_parser(tool_parser_options options)
    : tool_call_parser(std::move(options)) {}

void llama3_json_parser::consume(char c) {
  switch (state_) {
    case state::lead:
      return read_lead(c);
    case state::before_object:
      if (!hold(c) || is_space(c)) return;
      if (c != '{') return give_up(region_);
      scanner_.emplace(json_call_scanner::mode::call_object, limits().max_depth);
      committed_ = false;
      early_arguments_.clear();
      region_.pop_back();  // read_object holds it again
      return read_object(c);
    case state::object:
      return read_object(c);
    case state::after_object:
      // Between calls: whitespace, then ';' and the next call, or the end.
      if (!hold(c) || is_space(c)) return;
      if (c != ';') return give_up(region_);
      state_ = state::before_object;
      return;
  }
}

// Whitespace, then '{' or <|python_tag|>. Each byte is checked once.
void llama3_json_parser::read_lead(char c) {
  if (tag_matched_ == 0 && c == '{') {
    state_ = state::before_object;
    return consume(c);
  }
  if (!hold(c)) return;
  if (is_space(c) && tag_matched_ == 0) return;
  if (c != kPythonTag[tag_matched_]) return give_up(region_);
  if (++tag_matched_ == kPythonTag.size()) state_ = state::before_object;
}

void llama3_json_parser::read_object(char c) {
  const json_call_step step = read_json_call_byte(*scanner_, committed_, early_arguments_, c);
  if (step == json_call_step::failed) return;
  if (step == json_call_step::done) {
    state_ = state::after_object;
    region_.clear();
    return;
  }
  state_ = state::object;
}

void llama3_json_parser::at_end() {
  // Uncommitted text is content; a trailing separator or whitespace after a call is dropped;
  // a committed call cut by the end of output stays.
  if (state_ == state::after_object) return;
  if (state_ == state::object && committed_) return;
  if (state_ == state::before_object && has_calls() &&
      region_.find_first_not_of(" \n\t\r;") == std::string::npos) {
    return;
  }
  emit_content(region_);
}

}  // namespace actorllm::tool_calls
