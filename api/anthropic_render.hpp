#pragma once
/// The Messages API's answer to one call (anthropic_protocol.hpp has the request side): the
/// message object (non-streaming) and, streaming, its named events, built from chat_output's
/// deltas and message.
///
///   {"id": "msg_...", "type": "message", "role": "assistant", "model", "content": [blocks],
///    "stop_reason", "stop_sequence", "usage": {"input_tokens", "output_tokens"}}
///
/// Blocks, in output order: {"type": "thinking", "thinking", "signature": ""} (only when the
/// request enabled thinking), {"type": "text", "text"}, {"type": "tool_use", "id": "toolu_...",
/// "name", "input": {...}}. stop_reason: "max_tokens" when max_tokens cut the answer,
/// "stop_sequence" (stop_sequence the matched string) when a stop sequence ended it, "tool_use"
/// when it made tool calls, else "end_turn".
///
/// Events (each data object's "type" is its event's name): message_start (the message with
/// no content and the prompt's usage), ping, then per block content_block_start, its
/// content_block_delta events (text_delta, thinking_delta, input_json_delta with partial_json)
/// and content_block_stop; then message_delta ({"stop_reason", "stop_sequence"} and the usage)
/// and message_stop. Blocks appear one at a time, with their index in `content`.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/generate_request.hpp"

namespace actorllm::api {

/// How a message ended: stop_reason and stop_sequence (empty: null).
struct message_stop {
  std::string reason;
  std::string sequence;
};

/// The stop of a choice that ended with `finish` after `stop_string` matched (if any), having
/// made tool calls or not.
message_stop message_stop_of(finish_reason finish, const std::string& stop_string, bool calls);

class messages_renderer {
 public:
  /// `thinking`: the request enabled thinking; otherwise reasoning is left out of the answer.
  messages_renderer(std::string id, std::string model, bool thinking);

  /// message_start, with the prompt's tokens, and a ping.
  void open(int64_t input_tokens, std::vector<std::string>& events);
  /// One delta of chat_output (reasoning_content, content, tool_calls) as events.
  void on_delta(const nlohmann::json& delta, std::vector<std::string>& events);
  /// Closes the open block, then message_delta and message_stop.
  void close(finish_reason finish, const std::string& stop_string, int64_t input_tokens,
             int64_t output_tokens, std::vector<std::string>& events);
  /// The message object of `message` (chat_output::message()).
  nlohmann::json message(const nlohmann::json& message, finish_reason finish,
                         const std::string& stop_string, int64_t input_tokens,
                         int64_t output_tokens) const;

 private:
  struct block {
    std::string kind;  // thinking, text, tool_use
    std::string id, name;
  };
  void open_block(block b, std::vector<std::string>& events);
  void close_block(std::vector<std::string>& events);
  void emit_delta(nlohmann::json delta, std::vector<std::string>& events);
  nlohmann::json object(nlohmann::json content, const message_stop& stop, int64_t input_tokens,
                        int64_t output_tokens) const;

  std::string id_, model_;
  bool thinking_;
  std::vector<block> blocks_;
  bool block_open_ = false;
};

}  // namespace actorllm::api
