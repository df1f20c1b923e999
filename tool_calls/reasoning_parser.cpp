#include "tool_calls/reasoning_parser.hpp"

#include <stdexcept>

#include "tool_calls/whitespace.hpp"

namespace actorllm::tool_calls {
namespace {
constexpr std::string_view kThink = "<think>";
constexpr std::string_view kEndThink = "</think>";

// Leading whitespace held while waiting for <think>; past this the output is taken to have
// none (a bound on what is held back, decided at a fixed byte).
constexpr std::size_t kMaxLeadBytes = 256;

}  // namespace

reasoning_parser::reasoning_parser(std::string_view parser_name, bool starts_in_reasoning)
    : name_(parser_name),
      optional_(parser_name == "qwen3" && !starts_in_reasoning),
      state_(state::lead),
      end_(kEndThink) {
  if (parser_name != "deepseek_r1" && parser_name != "qwen3") {
    throw std::invalid_argument("unknown reasoning parser \"" + name_ + "\"");
  }
}

reasoning_split reasoning_parser::feed(std::string_view delta) {
  reasoning_split out;
  std::size_t i = 0;
  for (; i < delta.size() && state_ != state::content; ++i) consume(delta[i], out);
  out.content.append(delta.substr(i));
  return out;
}

void reasoning_parser::consume(char c, reasoning_split& out) {
  if (state_ == state::lead) {
    // Leading whitespace and <think> are held until they are known to open the thinking.
    lead_held_ += c;
    if (is_space(c) && lead_matched_ == 0 && lead_held_.size() <= kMaxLeadBytes) return;
    if (c == kThink[lead_matched_]) {
      if (++lead_matched_ == kThink.size()) {
        lead_held_.clear();
        state_ = state::reasoning;
      }
      return;
    }
    std::string held = std::move(lead_held_);
    lead_held_.clear();
    if (optional_) {
      state_ = state::content;
      out.content += held;
      return;
    }
    state_ = state::reasoning;
    for (char h : held) consume(h, out);
    return;
  }
  if (state_ == state::reasoning) {
    std::string released;
    const bool ended = end_.feed(c, released);
    out.reasoning += released;
    if (ended) state_ = state::content;
    return;
  }
  out.content += c;
}

reasoning_split reasoning_parser::finish() {
  reasoning_split out;
  if (state_ == state::lead) {
    // Only whitespace or part of <think>: text of whichever side the output was on.
    (optional_ ? out.content : out.reasoning) = std::move(lead_held_);
    lead_held_.clear();
  } else if (state_ == state::reasoning) {
    out.reasoning = end_.held();
    end_.clear();
  }
  return out;
}

reasoning_split split_reasoning(reasoning_parser& parser, std::string_view text) {
  reasoning_split out = parser.feed(text);
  reasoning_split rest = parser.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  return out;
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const std::size_t open = prompt.rfind(kThink);
  if (open == std::string_view::npos) return false;
  const std::size_t close = prompt.rfind(kEndThink);
  return close == std::string_view::npos || close < open;
}

}  // namespace actorllm::tool_calls
