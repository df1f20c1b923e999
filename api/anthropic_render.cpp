#include "api/anthropic_render.hpp"

#include <utility>

#include "api/ids.hpp"
#include "api/json_numbers.hpp"
#include "api/openai_call.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;

json or_null(const std::string& s) {
  return s.empty() ? json() : json(s);
}

json usage_json(int64_t input_tokens, int64_t output_tokens) {
  return {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}};
}

/// A tool call's input: its arguments text as an object. Arguments cut short (max_tokens)
/// are no object; the stop_reason says so, and the input is empty.
json input_of(const std::string& arguments) {
  json input = parse_keeping_huge_numbers(arguments);
  return input.is_object() ? input : json::object();
}

}  // namespace

message_stop message_stop_of(finish_reason finish, const std::string& stop_string, bool calls) {
  if (finish == finish_reason::length) return {"max_tokens", {}};
  if (!stop_string.empty()) return {"stop_sequence", stop_string};
  if (calls) return {"tool_use", {}};
  return {"end_turn", {}};
}

messages_renderer::messages_renderer(std::string id, std::string model, bool thinking)
    : id_(std::move(id)), model_(std::move(model)), thinking_(thinking) {}

void messages_renderer::open(int64_t input_tokens, std::vector<std::string>& events) {
  json start = object(json::array(), {}, input_tokens, 0);
  events.push_back(named_chunk("message_start", {{"type", "message_start"}, {"message", start}}));
  events.push_back(named_chunk("ping", {{"type", "ping"}}));
}

void messages_renderer::open_block(block b, std::vector<std::string>& events) {
  if (block_open_ && blocks_.back().kind == b.kind && b.kind != "tool_use") return;
  close_block(events);
  json content;
  if (b.kind == "thinking")
    content = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
  else if (b.kind == "text")
    content = {{"type", "text"}, {"text", ""}};
  else
    content = {{"type", "tool_use"}, {"id", b.id}, {"name", b.name}, {"input", json::object()}};
  blocks_.push_back(std::move(b));
  block_open_ = true;
  events.push_back(named_chunk("content_block_start", {{"type", "content_block_start"},
                                                       {"index", blocks_.size() - 1},
                                                       {"content_block", std::move(content)}}));
}

void messages_renderer::close_block(std::vector<std::string>& events) {
  if (!block_open_) return;
  block_open_ = false;
  events.push_back(named_chunk("content_block_stop",
                               {{"type", "content_block_stop"}, {"index", blocks_.size() - 1}}));
}

void messages_renderer::emit_delta(json delta, std::vector<std::string>& events) {
  events.push_back(named_chunk("content_block_delta", {{"type", "content_block_delta"},
                                                       {"index", blocks_.size() - 1},
                                                       {"delta", std::move(delta)}}));
}

void messages_renderer::on_delta(const json& delta, std::vector<std::string>& events) {
  if (!delta.is_object()) return;
  if (thinking_ && delta.contains("reasoning_content")) {
    open_block({"thinking", {}, {}}, events);
    emit_delta({{"type", "thinking_delta"}, {"thinking", delta["reasoning_content"]}}, events);
  }
  if (delta.contains("content")) {
    open_block({"text", {}, {}}, events);
    emit_delta({{"type", "text_delta"}, {"text", delta["content"]}}, events);
  }
  for (const json& call : delta.value("tool_calls", json::array())) {
    const json& function = call.value("function", json::object());
    if (call.contains("id"))
      open_block({"tool_use", random_id("toolu_"), function.value("name", "")}, events);
    const std::string arguments = function.value("arguments", "");
    if (arguments.empty() || !block_open_ || blocks_.back().kind != "tool_use") continue;
    emit_delta({{"type", "input_json_delta"}, {"partial_json", arguments}}, events);
  }
}

void messages_renderer::close(finish_reason finish, const std::string& stop_string,
                              int64_t input_tokens, int64_t output_tokens,
                              std::vector<std::string>& events) {
  close_block(events);
  bool calls = false;
  for (const block& b : blocks_) calls |= b.kind == "tool_use";
  const message_stop stop = message_stop_of(finish, stop_string, calls);
  events.push_back(named_chunk(
      "message_delta",
      {{"type", "message_delta"},
       {"delta", {{"stop_reason", stop.reason}, {"stop_sequence", or_null(stop.sequence)}}},
       {"usage", usage_json(input_tokens, output_tokens)}}));
  events.push_back(named_chunk("message_stop", {{"type", "message_stop"}}));
}

json messages_renderer::message(const json& message, finish_reason finish,
                                const std::string& stop_string, int64_t input_tokens,
                                int64_t output_tokens) const {
  json content = json::array();
  if (thinking_ && message.value("reasoning_content", json()).is_string())
    content.push_back(
        {{"type", "thinking"}, {"thinking", message["reasoning_content"]}, {"signature", ""}});
  if (message.value("content", json()).is_string() &&
      !message["content"].get_ref<const std::string&>().empty())
    content.push_back({{"type", "text"}, {"text", message["content"]}});
  const json calls = message.value("tool_calls", json::array());
  for (const json& call : calls)
    content.push_back({{"type", "tool_use"},
                       {"id", random_id("toolu_")},
                       {"name", call["function"]["name"]},
                       {"input", input_of(call["function"]["arguments"])}});
  return object(std::move(content), message_stop_of(finish, stop_string, !calls.empty()),
                input_tokens, output_tokens);
}

json messages_renderer::object(json content, const message_stop& stop, int64_t input_tokens,
                               int64_t output_tokens) const {
  return {{"id", id_},
          {"type", "message"},
          {"role", "assistant"},
          {"model", model_},
          {"content", std::move(content)},
          {"stop_reason", or_null(stop.reason)},
          {"stop_sequence", or_null(stop.sequence)},
          {"usage", usage_json(input_tokens, output_tokens)}};
}

}  // namespace actorllm::api
