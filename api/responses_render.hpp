#pragma once
/// The Responses API's answer to one call: the Response object (non-streaming, and inside
/// response.completed) and, streaming, its events, built from chat_output's deltas and
/// message (responses_protocol.hpp has the request side).
///
/// Events, each {"type", "sequence_number", ...}: response.created and response.in_progress;
/// per output item response.output_item.added, its deltas (response.reasoning_text.delta,
/// response.output_text.delta after response.content_part.added,
/// response.function_call_arguments.delta), its closing events (..._text.done,
/// response.content_part.done, response.function_call_arguments.done) and
/// response.output_item.done; then response.completed (status "incomplete" when
/// max_output_tokens cut the answer). Items appear in output order and one at a time.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace actorllm::api {

class responses_renderer {
 public:
  /// `fields`: the request's fields that every Response object repeats (responses_fields::echo).
  responses_renderer(std::string id, std::string model, int64_t created,
                     nlohmann::json fields = nlohmann::json::object());

  /// response.created and response.in_progress.
  void open(std::vector<std::string>& events);
  /// One delta of chat_output (reasoning_content, content, tool_calls) as events.
  void on_delta(const nlohmann::json& delta, std::vector<std::string>& events);
  /// Closes the open item and sends response.completed with the whole response.
  void close(const std::string& finish_reason, const nlohmann::json& usage,
             std::vector<std::string>& events);
  /// The Response object of what was streamed, or of `message` (chat_output::message())
  /// when nothing was.
  nlohmann::json response(const nlohmann::json& message, const std::string& finish_reason,
                          const nlohmann::json& usage) const;
  /// Not streamed: makes the final Response object of `message` once, so that every reader of
  /// whole() sees the same item ids.
  void finish(const nlohmann::json& message, const std::string& finish_reason,
              const nlohmann::json& usage);
  /// The final Response object (response.completed's, or finish()'s); null before either.
  const nlohmann::json& whole() const { return whole_; }
  /// The Response object with no output yet and this status (queued, in_progress, ...).
  nlohmann::json pending(const std::string& status) const;

 private:
  struct item {
    std::string kind;  // reasoning, message, function_call
    std::string id;
    std::string text;  // reasoning or message text, or the call's arguments
    std::string call_id, name;
  };
  item& open_item(std::string kind, std::vector<std::string>& events, std::string call_id = {},
                  std::string name = {});
  void close_item(std::vector<std::string>& events);
  nlohmann::json item_json(const item& it, bool done) const;
  nlohmann::json object(const std::vector<item>& items, const std::string& finish,
                        const nlohmann::json& usage) const;
  void emit(nlohmann::json event, std::vector<std::string>& events);

  std::string id_, model_;
  int64_t created_;
  nlohmann::json fields_;
  nlohmann::json whole_;
  std::vector<item> items_;
  bool item_open_ = false;
  int64_t sequence_ = 0;
};

}  // namespace actorllm::api
