#pragma once
/// vLLM's --reasoning-parser deepseek_r1 and qwen3: split the generated text into the
/// thinking (<think> ... </think>, sent as reasoning_content) and the answer (content).
///
///   deepseek_r1: the output starts inside the thinking (DeepSeek-R1's template ends the prompt
///     with "<think>\n"); a <think> the model writes itself at the start is dropped. Everything
///     before </think> is reasoning; without </think> (cut by max_tokens) all of it is.
///   qwen3: the thinking is optional. Output that starts with <think> (after whitespace) is
///     reasoning up to </think>; any other output is content, which covers enable_thinking
///     false, where the template closes an empty <think></think> in the prompt. When the prompt
///     itself leaves <think> open (newer Qwen3 templates), pass starts_in_reasoning (see
///     prompt_opens_reasoning) and it behaves as deepseek_r1.
///
/// The tags themselves are never sent. Text after </think> is content verbatim. The split is
/// the same however the text is cut into deltas; only the bytes that might begin a tag are
/// held back (fewer than 9).
#include <string>
#include <string_view>

#include "tool_calls/marker_finder.hpp"

namespace actorllm::tool_calls {

/// One delta's (or a whole output's) split. Reasoning always precedes content.
struct reasoning_split {
  std::string reasoning;
  std::string content;

  bool operator==(const reasoning_split&) const = default;
};

class reasoning_parser {
 public:
  /// parser_name: "deepseek_r1" or "qwen3" (std::invalid_argument otherwise).
  /// starts_in_reasoning: the prompt opened <think>, so the output begins inside it.
  reasoning_parser(std::string_view parser_name, bool starts_in_reasoning);

  reasoning_split feed(std::string_view delta);
  reasoning_split finish();
  const std::string& name() const { return name_; }
  /// Whether </think> has been read (from then on everything is content): the point where
  /// vLLM starts enforcing a structured output.
  bool reasoning_ended() const { return state_ == state::content; }

 private:
  enum class state { lead, reasoning, content };
  void consume(char c, reasoning_split& out);

  std::string name_;
  bool optional_;  // qwen3 without an open <think>: no tag at the start means no thinking
  state state_;
  std::size_t lead_matched_ = 0;  // bytes of <think> read at the start
  std::string lead_held_;         // whitespace and partial <think> at the start
  marker_finder end_;
};

/// The whole-text split.
reasoning_split split_reasoning(reasoning_parser& parser, std::string_view text);

/// Whether a rendered prompt ends inside an open <think> (its last <think> is not closed),
/// so the output starts in the thinking.
bool prompt_opens_reasoning(std::string_view prompt);

}  // namespace actorllm::tool_calls
