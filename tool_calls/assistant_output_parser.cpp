#include "tool_calls/assistant_output_parser.hpp"

namespace actorllm::tool_calls {

assistant_output_parser::assistant_output_parser(std::unique_ptr<reasoning_parser> reasoning,
                                                 std::unique_ptr<tool_call_parser> tools)
    : reasoning_(std::move(reasoning)), tools_(std::move(tools)) {}

void assistant_output_parser::add_content(std::string_view content, output_delta& out) {
  if (!tools_) {
    if (content.empty()) return;
    stream_event e;
    e.text = std::string(content);
    out.events.push_back(std::move(e));
    return;
  }
  for (stream_event& e : tools_->feed(content)) out.events.push_back(std::move(e));
}

output_delta assistant_output_parser::feed(std::string_view delta) {
  output_delta out;
  if (!reasoning_) {
    add_content(delta, out);
    return out;
  }
  reasoning_split split = reasoning_->feed(delta);
  out.reasoning = std::move(split.reasoning);
  add_content(split.content, out);
  return out;
}

output_delta assistant_output_parser::finish() {
  output_delta out;
  if (reasoning_) {
    reasoning_split split = reasoning_->finish();
    out.reasoning = std::move(split.reasoning);
    add_content(split.content, out);
  }
  if (tools_) {
    for (stream_event& e : tools_->finish()) out.events.push_back(std::move(e));
  }
  return out;
}

void apply_delta(assistant_message& into, const output_delta& delta) {
  into.reasoning += delta.reasoning;
  apply_events(into.output, delta.events);
}

assistant_message parse_whole(assistant_output_parser& parser, std::string_view text) {
  assistant_message message;
  apply_delta(message, parser.feed(text));
  apply_delta(message, parser.finish());
  return message;
}

}  // namespace actorllm::tool_calls
