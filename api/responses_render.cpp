#include "api/responses_render.hpp"

#include <utility>

#include "api/ids.hpp"
#include "api/openai_call.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;

/// {"input_tokens", "output_tokens", ...} from the chat usage object.
json response_usage(const json& usage) {
  const int64_t input = usage.value("prompt_tokens", int64_t{0});
  const int64_t output = usage.value("completion_tokens", int64_t{0});
  int64_t cached = 0;
  if (usage.contains("prompt_tokens_details"))
    cached = usage["prompt_tokens_details"].value("cached_tokens", int64_t{0});
  return {{"input_tokens", input},
          {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", output},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", input + output}};
}

}  // namespace

responses_renderer::responses_renderer(std::string id, std::string model, int64_t created,
                                       json fields)
    : id_(std::move(id)), model_(std::move(model)), created_(created), fields_(std::move(fields)) {}

void responses_renderer::emit(json event, std::vector<std::string>& events) {
  event["sequence_number"] = sequence_++;
  events.push_back(to_wire(event));
}

json responses_renderer::pending(const std::string& status) const {
  json object = this->object({}, "", json());
  object["status"] = status;
  return object;
}

void responses_renderer::open(std::vector<std::string>& events) {
  const json in_progress = pending("in_progress");
  emit({{"type", "response.created"}, {"response", in_progress}}, events);
  emit({{"type", "response.in_progress"}, {"response", in_progress}}, events);
}

json responses_renderer::item_json(const item& it, bool done) const {
  const char* status = done ? "completed" : "in_progress";
  if (it.kind == "reasoning") {
    json content = json::array();
    if (done) content.push_back({{"type", "reasoning_text"}, {"text", it.text}});
    return {{"id", it.id}, {"type", "reasoning"}, {"summary", json::array()}, {"content", content}};
  }
  if (it.kind == "message") {
    json content = json::array();
    if (done)
      content.push_back(
          {{"type", "output_text"}, {"text", it.text}, {"annotations", json::array()}});
    return {{"id", it.id},
            {"type", "message"},
            {"status", status},
            {"role", "assistant"},
            {"content", content}};
  }
  return {{"id", it.id},           {"type", "function_call"}, {"status", status},
          {"call_id", it.call_id}, {"name", it.name},         {"arguments", done ? it.text : ""}};
}

responses_renderer::item& responses_renderer::open_item(std::string kind,
                                                        std::vector<std::string>& events,
                                                        std::string call_id, std::string name) {
  if (item_open_ && items_.back().kind == kind && kind != "function_call") return items_.back();
  close_item(events);
  const char* prefix = kind == "reasoning" ? "rs_" : kind == "message" ? "msg_" : "fc_";
  items_.push_back({std::move(kind), random_id(prefix), {}, std::move(call_id), std::move(name)});
  item_open_ = true;
  const item& it = items_.back();
  const std::size_t index = items_.size() - 1;
  emit({{"type", "response.output_item.added"},
        {"output_index", index},
        {"item", item_json(it, false)}},
       events);
  if (it.kind == "message")
    emit({{"type", "response.content_part.added"},
          {"item_id", it.id},
          {"output_index", index},
          {"content_index", 0},
          {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}},
         events);
  return items_.back();
}

void responses_renderer::close_item(std::vector<std::string>& events) {
  if (!item_open_) return;
  item_open_ = false;
  const item& it = items_.back();
  const std::size_t index = items_.size() - 1;
  if (it.kind == "reasoning") {
    emit({{"type", "response.reasoning_text.done"},
          {"item_id", it.id},
          {"output_index", index},
          {"content_index", 0},
          {"text", it.text}},
         events);
  } else if (it.kind == "message") {
    emit({{"type", "response.output_text.done"},
          {"item_id", it.id},
          {"output_index", index},
          {"content_index", 0},
          {"text", it.text},
          {"logprobs", json::array()}},
         events);
    emit({{"type", "response.content_part.done"},
          {"item_id", it.id},
          {"output_index", index},
          {"content_index", 0},
          {"part", {{"type", "output_text"}, {"text", it.text}, {"annotations", json::array()}}}},
         events);
  } else {
    emit({{"type", "response.function_call_arguments.done"},
          {"item_id", it.id},
          {"output_index", index},
          {"arguments", it.text}},
         events);
  }
  emit({{"type", "response.output_item.done"},
        {"output_index", index},
        {"item", item_json(it, true)}},
       events);
}

void responses_renderer::on_delta(const json& delta, std::vector<std::string>& events) {
  if (!delta.is_object()) return;
  if (delta.contains("reasoning_content")) {
    item& it = open_item("reasoning", events);
    const std::string text = delta["reasoning_content"];
    it.text += text;
    emit({{"type", "response.reasoning_text.delta"},
          {"item_id", it.id},
          {"output_index", items_.size() - 1},
          {"content_index", 0},
          {"delta", text}},
         events);
  }
  if (delta.contains("content")) {
    item& it = open_item("message", events);
    const std::string text = delta["content"];
    it.text += text;
    emit({{"type", "response.output_text.delta"},
          {"item_id", it.id},
          {"output_index", items_.size() - 1},
          {"content_index", 0},
          {"delta", text},
          {"logprobs", json::array()}},
         events);
  }
  for (const json& call : delta.value("tool_calls", json::array())) {
    const json& function = call.value("function", json::object());
    if (call.contains("id"))
      open_item("function_call", events, call["id"], function.value("name", ""));
    const std::string arguments = function.value("arguments", "");
    if (arguments.empty() || !item_open_) continue;
    item& it = items_.back();
    it.text += arguments;
    emit({{"type", "response.function_call_arguments.delta"},
          {"item_id", it.id},
          {"output_index", items_.size() - 1},
          {"delta", arguments}},
         events);
  }
}

void responses_renderer::close(const std::string& finish_reason, const json& usage,
                               std::vector<std::string>& events) {
  close_item(events);
  whole_ = object(items_, finish_reason, usage);
  emit({{"type", whole_["status"] == "completed" ? "response.completed" : "response.incomplete"},
        {"response", whole_}},
       events);
}

void responses_renderer::finish(const json& message, const std::string& finish_reason,
                                const json& usage) {
  whole_ = response(message, finish_reason, usage);
}

json responses_renderer::response(const json& message, const std::string& finish_reason,
                                  const json& usage) const {
  std::vector<item> items;
  if (message.value("reasoning_content", json()).is_string())
    items.push_back({"reasoning", random_id("rs_"), message["reasoning_content"], {}, {}});
  if (message.value("content", json()).is_string() &&
      !message["content"].get_ref<const std::string&>().empty())
    items.push_back({"message", random_id("msg_"), message["content"], {}, {}});
  for (const json& call : message.value("tool_calls", json::array()))
    items.push_back({"function_call", random_id("fc_"), call["function"]["arguments"], call["id"],
                     call["function"]["name"]});
  return object(items, finish_reason, usage);
}

json responses_renderer::object(const std::vector<item>& items, const std::string& finish,
                                const json& usage) const {
  json output = json::array();
  std::string text;
  for (const item& it : items) {
    output.push_back(item_json(it, true));
    if (it.kind == "message") text += it.text;
  }
  const bool cut = finish == "length";
  json response = {{"id", id_},
                   {"object", "response"},
                   {"created_at", created_},
                   {"status", cut ? "incomplete" : "completed"},
                   {"incomplete_details", cut ? json{{"reason", "max_output_tokens"}} : json()},
                   {"error", nullptr},
                   {"model", model_},
                   {"output", std::move(output)},
                   {"output_text", text},
                   {"parallel_tool_calls", true},
                   {"tool_choice", "auto"},
                   {"tools", json::array()},
                   {"store", true},
                   {"background", false},
                   {"previous_response_id", nullptr},
                   {"instructions", nullptr},
                   {"metadata", json::object()},
                   {"text", {{"format", {{"type", "text"}}}}},
                   {"usage", usage.is_null() ? json() : response_usage(usage)}};
  for (const auto& [key, value] : fields_.items()) response[key] = value;
  return response;
}

}  // namespace actorllm::api
