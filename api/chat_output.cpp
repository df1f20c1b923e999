#include "api/chat_output.hpp"

#include <utility>

namespace actorllm::api {
namespace {

using nlohmann::json;
using tool_calls::stream_event;

void append_text(json& delta, const char* key, const std::string& text) {
  if (text.empty()) return;
  if (delta.is_null()) delta = json::object();
  delta[key] = delta.contains(key) ? delta[key].get<std::string>() + text : text;
}

}  // namespace

chat_output::chat_output(const chat_output_options& options) : options_(options), ids_(0) {
  if (!options_.reasoning_parser.empty()) {
    // DeepSeek-R1's template ends the prompt inside <think>; Qwen3's thinking is optional.
    const bool starts_inside = options_.reasoning_parser == "deepseek_r1";
    reasoning_ = tool_calls::make_reasoning_parser(options_.reasoning_parser, starts_inside);
  }
  tool_calls::tool_parser_options parser_options;
  parser_options.tool_names = options_.tools.names;
  if (!options_.tools.parallel) parser_options.max_calls = 1;  // parallel_tool_calls false
  if (options_.tools.mode == tool_mode::parse)
    parser_ = tool_calls::make_tool_call_parser(options_.tool_call_parser, parser_options);
  // "required": the forced array of calls, streamed as it comes (each call once its name is
  // known, then its arguments in pieces, as the model wrote them).
  if (options_.tools.mode == tool_mode::forced_required)
    parser_ = std::make_unique<tool_calls::required_calls_parser>(parser_options);
}

json chat_output::feed(std::string_view text, bool last) {
  json delta;
  std::string content(text);
  if (reasoning_) {
    tool_calls::reasoning_split split = reasoning_->feed(text);
    if (last) {
      tool_calls::reasoning_split rest = reasoning_->finish();
      split.reasoning += rest.reasoning;
      split.content += rest.content;
    }
    reasoning_text_ += split.reasoning;
    // vLLM sends both names: reasoning_content (its older one, what most clients read) and
    // reasoning.
    append_text(delta, "reasoning_content", split.reasoning);
    append_text(delta, "reasoning", split.reasoning);
    content = std::move(split.content);
  }
  on_content(content, delta);
  if (last) {
    if (parser_)
      for (const stream_event& e : parser_->finish()) add_event(e, delta);
  }
  return delta;
}

void chat_output::on_content(const std::string& text, json& delta) {
  switch (options_.tools.mode) {
    case tool_mode::none:
      add_event({stream_event::kind::content, 0, text, {}, {}}, delta);
      return;
    case tool_mode::parse:
    case tool_mode::forced_required:
      for (const stream_event& e : parser_->feed(text)) add_event(e, delta);
      return;
    case tool_mode::forced_named:
      // The output is the function's arguments, from the first byte on.
      if (!forced_started_) {
        forced_started_ = true;
        add_event({stream_event::kind::call_start,
                   0,
                   {},
                   ids_.next_openai_id(),
                   options_.tools.forced_name},
                  delta);
      }
      add_event({stream_event::kind::call_arguments, 0, text, {}, {}}, delta);
      return;
  }
}

void chat_output::add_event(const stream_event& event, json& delta) {
  if (event.what == stream_event::kind::content) {
    if (event.text.empty()) return;
    parsed_.content += event.text;
    append_text(delta, "content", event.text);
    return;
  }
  if (event.what == stream_event::kind::call_arguments && event.text.empty()) return;
  tool_calls::apply_events(parsed_, {event});
  if (delta.is_null()) delta = json::object();
  if (!delta.contains("tool_calls")) delta["tool_calls"] = json::array();
  json& list = delta["tool_calls"];
  // Fragments of one call in one delta merge into its entry.
  if (event.what == stream_event::kind::call_arguments && !list.empty() &&
      list.back()["index"] == event.call_index) {
    json& function = list.back()["function"];
    function["arguments"] = function.value("arguments", std::string()) + event.text;
    return;
  }
  list.push_back(tool_calls::to_openai_delta(event));
}

json chat_output::message() const {
  json message = {{"role", options_.role}};
  const bool calls = !parsed_.calls.empty();
  message["content"] = calls && parsed_.content.empty() ? json() : json(parsed_.content);
  if (reasoning_) {
    message["reasoning_content"] = reasoning_text_.empty() ? json() : json(reasoning_text_);
    message["reasoning"] = message["reasoning_content"];
  }
  if (calls) {
    json list = json::array();
    for (const auto& call : parsed_.calls) list.push_back(tool_calls::to_openai_json(call));
    message["tool_calls"] = std::move(list);
  } else {
    message["tool_calls"] = json::array();
  }
  return message;
}

std::string chat_output::finish_reason(enum finish_reason finish) const {
  // A named function is what the client asked for, not the model's choice: OpenAI answers
  // "stop" there.
  const bool model_called =
      options_.tools.mode == tool_mode::parse || options_.tools.mode == tool_mode::forced_required;
  if (finish == finish_reason::stop && model_called && !parsed_.calls.empty()) return "tool_calls";
  return to_string(finish);
}

}  // namespace actorllm::api
