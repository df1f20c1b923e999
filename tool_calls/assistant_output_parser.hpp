#pragma once
/// The whole pipeline for one generated sequence: the reasoning parser first (its content is
/// the answer), then the tool-call parser on that content. Either may be absent: no
/// --reasoning-parser, or no tool parsing (tool_choice "none", no tools, no parser).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tool_calls/reasoning_parser.hpp"
#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls {

/// What a delta of generated text becomes: thinking (delta.reasoning_content), then content
/// and tool-call events in order (delta.content, delta.tool_calls).
struct output_delta {
  std::string reasoning;
  std::vector<stream_event> events;

  bool empty() const { return reasoning.empty() && events.empty(); }
};

/// A whole message: reasoning_content, content and tool_calls.
struct assistant_message {
  std::string reasoning;
  parsed_output output;

  bool operator==(const assistant_message&) const = default;
};

class assistant_output_parser {
 public:
  assistant_output_parser(std::unique_ptr<reasoning_parser> reasoning,
                          std::unique_ptr<tool_call_parser> tools);

  output_delta feed(std::string_view delta);
  /// The end of the sequence: what was held back.
  output_delta finish();

  /// finish_reason "tool_calls" when the sequence stopped normally and this holds.
  bool has_calls() const { return tools_ && tools_->has_calls(); }
  /// Whether the thinking is over (always, without a reasoning parser): where vLLM starts
  /// enforcing a structured output.
  bool reasoning_ended() const { return !reasoning_ || reasoning_->reasoning_ended(); }

 private:
  void add_content(std::string_view content, output_delta& out);

  std::unique_ptr<reasoning_parser> reasoning_;
  std::unique_ptr<tool_call_parser> tools_;
};

/// The folded result of feed(text) and finish().
assistant_message parse_whole(assistant_output_parser& parser, std::string_view text);
/// Folds one delta into a message (what a streaming client reconstructs).
void apply_delta(assistant_message& into, const output_delta& delta);

}  // namespace actorllm::tool_calls
