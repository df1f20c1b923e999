#pragma once
/// What the chat API makes of one choice's generated text: the reasoning split off
/// (--reasoning-parser), tool calls parsed from the rest (--tool-call-parser, tool_choice
/// "auto") or read from a forced output (tool_choice "required" or a named function, which
/// structured output held to the calls' shape), and what remains as content.
///
/// Streaming: feed() each text delta and gets the OpenAI delta to send ({"reasoning_content",
/// "reasoning", "content", "tool_calls": [...]}, null when nothing is decided yet); the end of
/// the choice (last = true) flushes what was held back. Whole: the same feeds, then message().
/// The two always agree: the message is the streamed deltas folded.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_request.hpp"
#include "common/generate_request.hpp"
#include "tool_calls/tool_calls.hpp"

namespace actorllm::api {

struct chat_output_options {
  tool_request tools;
  std::string tool_call_parser;    ///< for tool_mode::parse
  std::string reasoning_parser;    ///< empty: no reasoning split
  std::string role = "assistant";  ///< the answer's role (vLLM's --response-role)
  /// Whether any choice needs this processing (otherwise content passes straight through).
  bool active() const { return tools.mode != tool_mode::none || !reasoning_parser.empty(); }
};

class chat_output {
 public:
  explicit chat_output(const chat_output_options& options);

  /// One delta of the choice's text; `last`: the choice ended with it. Returns the delta
  /// object to stream, or null.
  nlohmann::json feed(std::string_view text, bool last);

  /// The whole message: {"role": "assistant", "content", "reasoning_content"?, "tool_calls"?}.
  nlohmann::json message() const;
  /// The finish_reason to report for `finish`: "tool_calls" when calls were made on the
  /// model's own choice or by "required" and the choice stopped normally.
  std::string finish_reason(finish_reason finish) const;

 private:
  void on_content(const std::string& text, nlohmann::json& delta);
  void add_event(const tool_calls::stream_event& event, nlohmann::json& delta);

  chat_output_options options_;
  std::unique_ptr<tool_calls::reasoning_parser> reasoning_;
  std::unique_ptr<tool_calls::tool_call_parser> parser_;
  tool_calls::call_id_source ids_;

  std::string reasoning_text_;
  tool_calls::parsed_output parsed_;  // content and calls so far (what the deltas fold to)
  bool forced_started_ = false;       // forced_named: the call was announced
};

}  // namespace actorllm::api
