#pragma once
/// One API call (completions or chat, streamed or not): engine deltas in, OpenAI objects out.
/// Used from one strand at a time; not thread-safe. Knows nothing of sockets.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/anthropic_render.hpp"
#include "api/chat_output.hpp"
#include "api/openai_protocol.hpp"
#include "api/responses_render.hpp"
#include "common/generate_request.hpp"

namespace actorllm::api {

struct call_options {
  api_kind kind = api_kind::completion;
  std::string id;       ///< "id" of every object sent back (cmpl-..., or a WebSocket id)
  std::string model;    ///< "model" of every object sent back
  int64_t created = 0;  ///< unix seconds
  int32_t n = 1;        ///< samples per prompt
  bool stream = false;
  bool include_usage = false;     ///< streaming: "usage": null in chunks and a last usage chunk
  bool continuous_usage = false;  ///< with include_usage: each chunk has the usage so far
  bool logprobs = false;          ///< render logprobs (the API's shape for `kind`)
  /// Completions' echo with logprobs: the prompt's tokens lead each choice's logprobs.
  bool echo_logprobs = false;
  /// vLLM's prompt_logprobs: a list per choice (completions) or per answer (chat).
  bool prompt_logprobs = false;
  bool error_chunk = true;  ///< streaming: a failure after the first chunk is an error chunk
  /// "system_fingerprint" of every completion, chat and chunk object (left out when empty).
  std::string system_fingerprint;
  /// Chat: reasoning and tool calls to find in each choice's text (chat_output.hpp).
  chat_output_options chat;
  bool thinking = false;  ///< messages: the request enabled thinking (anthropic_render.hpp)
  /// Responses: what the Response object repeats, and what is stored with it.
  responses_fields responses;
};

/// This build's system_fingerprint: "fp_actorllm_<version>". The same for every response of
/// one server build, as OpenAI's names the backend configuration behind an answer.
std::string system_fingerprint();

class openai_call {
 public:
  /// `engine_ids[p]` is the engine request id of prompt p.
  openai_call(call_options options, std::vector<std::string> engine_ids);

  const std::vector<std::string>& engine_ids() const { return engine_ids_; }
  const call_options& options() const { return options_; }

  /// Feeds one delta. Streaming: appends the chunk objects it yields (JSON text) to
  /// `chunks`; in chat the role chunks of every choice come first, and a Messages call's
  /// chunks name their events (named_chunk). A failure after chunks went out becomes an
  /// {"error": ...} chunk (Messages: an `error` event) and ends the call. Deltas of unknown
  /// requests or choices are ignored.
  void add(const request_output& out, std::vector<std::string>& chunks);

  /// Every choice finished, or the call failed.
  bool done() const { return failed() || num_finished_ == choices_.size(); }
  bool failed() const { return error_.has_value(); }
  /// Some chunk was produced (a streamed failure can no longer change the HTTP status).
  bool started() const { return started_; }
  const std::optional<api_error>& error() const { return error_; }

  /// Whether a stream ends OpenAI's way, with the usage chunk (when asked) and [DONE]; a
  /// Responses or Messages stream ends with its own last event.
  bool ends_with_done() const {
    return options_.kind == api_kind::completion || options_.kind == api_kind::chat;
  }
  /// Streaming with include_usage: the last chunk, with empty choices and the usage.
  std::string usage_chunk() const;
  /// Non-streaming: the whole completion / chat.completion object.
  std::string response() const;

  /// Responses, once done and not failed: the final Response object (what response() sends,
  /// or what response.completed carried), the same item ids every time.
  nlohmann::json response_object() const;
  /// Responses: the Response object of what was generated so far (a cancelled call's), with
  /// `status`; fresh item ids on every call.
  nlohmann::json partial_response_object(const std::string& status) const;
  /// Responses: the Response object with no output yet and `status` (queued, ...).
  nlohmann::json pending_response_object(const std::string& status) const;

 private:
  struct choice {
    std::string text;
    nlohmann::json logprobs;         ///< non-streaming: accumulated in the API's shape
    nlohmann::json prompt_logprobs;  ///< non-streaming: vllm_prompt_logprobs of the prompt
    finish_reason finish = finish_reason::none;
    std::string stop_reason;  ///< the matched stop string
    int32_t stop_token = -1;  ///< the stop token id that ended the choice, else -1
    int32_t num_generated = 0;
    int32_t text_offset = 0;  ///< completions logprobs: code points before the next token
    std::unique_ptr<chat_output> output;  ///< chat with reasoning or tools: the parsed text
  };
  struct prompt {
    int32_t num_prompt_tokens = 0;
    int32_t num_cached_tokens = 0;
  };

  nlohmann::json chunk_base() const;
  nlohmann::json usage() const;
  /// The delta's logprobs in the API's shape (with echo, the prompt's first); null if none.
  nlohmann::json render_logprobs(const request_output& out, choice& c) const;
  nlohmann::json render_token_logprobs(const request_output& out, choice& c) const;
  void append_logprobs(nlohmann::json& into, const nlohmann::json& delta) const;
  void fail(api_error error, std::vector<std::string>& chunks);
  /// One streamed chunk with one choice entry, as to_wire() would write the object.
  std::string render_chunk(std::size_t index, const request_output& out,
                           const nlohmann::json& logprobs, const choice& c);
  /// The same for a chat choice whose text went through chat_output: `delta` as it made it.
  std::string render_parsed_chunk(std::size_t index, const nlohmann::json& delta,
                                  const nlohmann::json& logprobs, const choice& c) const;

  call_options options_;
  std::vector<std::string> engine_ids_;
  std::unordered_map<std::string, int32_t> prompt_of_;
  std::vector<choice> choices_;
  std::vector<prompt> prompts_;
  std::size_t num_finished_ = 0;
  bool started_ = false;
  std::optional<api_error> error_;
  std::unique_ptr<responses_renderer> responses_;  ///< api_kind::responses
  std::unique_ptr<messages_renderer> messages_;    ///< api_kind::messages
  // What every streamed chunk has after its choice: ],"created":...} (rendered on first use;
  // before the choice there is always {"choices":[).
  std::string frame_suffix_;
};

/// Merges deltas of the same choice that are ready at once (in order), so a slow reader
/// gets fewer, larger chunks instead of one object per token.
void merge_deltas(std::vector<request_output>& outputs);

/// JSON text of an object as sent on the wire (invalid UTF-8 replaced, never throws).
std::string to_wire(const nlohmann::json& object);

/// A streamed chunk that names its event: `event`, a newline, then to_wire(data) (which never
/// holds a raw newline). The transport sends it as `event: <event>` and `data: <json>`.
std::string named_chunk(std::string_view event, const nlohmann::json& data);

}  // namespace actorllm::api
