#pragma once
/// What a client asks for and what it gets back, independent of HTTP and of actors.
/// net/ builds generate_request from OpenAI JSON; the router consumes it and streams
/// request_output deltas back. Both cross actor boundaries (inspect() in actors/messages.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/sampling_params.hpp"

namespace actorllm {

enum class prompt_kind : uint8_t { text, token_ids, chat };

struct generate_request {
  std::string request_id;
  prompt_kind kind = prompt_kind::text;
  std::string text;                ///< kind == text
  std::vector<int32_t> token_ids;  ///< kind == token_ids
  std::string chat_json;  ///< kind == chat: {"messages": [...], "tools": [...]?} as JSON text
  bool add_generation_prompt = true;
  bool add_special_tokens = true;  ///< BOS for text prompts (chat templates add their own)
  bool echo = false;               ///< completions: prepend the prompt to the output text
  /// Completions' echo with max_tokens 0 (how evaluation harnesses score a text): the prompt
  /// is computed (params.max_tokens is 1) and the token sampled after it is not reported.
  bool echo_without_generation = false;
  sampling_params params;
  std::string model;  ///< served model name asked for (validated by the router)
  /// A conversation's key (OpenAI's `user`, or `session_id`): the router keeps its requests on
  /// one replica while that replica serves, so each turn finds the last in its prefix cache.
  std::string session;
  /// kind == chat: the images of the messages' image parts, in order (each part stands in
  /// chat_json as {"type": "image"}), as the client gave them: data:, http(s):// or file://
  /// URLs. The router fetches and decodes them (media/) and refuses them for a model that
  /// takes no images.
  std::vector<std::string> image_urls;
};

enum class finish_reason : uint8_t { none, stop, length, abort, error };

inline const char* to_string(finish_reason reason) {
  switch (reason) {
    case finish_reason::stop:
      return "stop";
    case finish_reason::length:
      return "length";
    case finish_reason::abort:
      return "abort";
    case finish_reason::error:
      return "error";
    case finish_reason::none:
      break;
  }
  return "";
}

/// Log-probability of one token (generated, or of the prompt) and of the top alternatives at
/// its position.
struct token_logprob {
  int32_t token_id = 0;
  float logprob = 0.0f;
  int32_t rank = 0;  ///< 1 + the number of tokens more likely than token_id (vLLM's rank)
  std::vector<int32_t> top_ids;  ///< most likely first
  std::vector<float> top_logprobs;
  std::vector<std::string> top_texts;  ///< text of each top_ids entry, when known (for the API)
};

/// One streamed delta of one choice (sample) of a request. The last delta of a choice has
/// finish != none. Token counts are cumulative so the last delta carries the usage.
struct request_output {
  std::string request_id;
  int32_t index = 0;                     ///< choice index in [0, n)
  std::string text;                      ///< new text since the previous delta
  std::vector<int32_t> token_ids;        ///< new token ids since the previous delta
  std::vector<std::string> token_texts;  ///< text of each new token (for logprobs), if asked
  std::vector<token_logprob> logprobs;   ///< one per new token when logprobs were asked
  /// With params.prompt_logprobs >= 0, on a choice's first delta: one per prompt token after
  /// the first (which has no context to be scored in), from the raw model distribution.
  std::vector<token_logprob> prompt_logprobs;
  /// Alongside prompt_logprobs: the text of every prompt token, the first included.
  std::vector<std::string> prompt_token_texts;
  finish_reason finish = finish_reason::none;
  std::string stop_reason;  ///< the matched stop string, if one ended the choice
  int32_t stop_token = -1;  ///< the stop_token_ids entry that ended the choice, else -1
  int32_t num_prompt_tokens = 0;
  int32_t num_generated_tokens = 0;  ///< cumulative for this choice
  int32_t num_cached_tokens = 0;     ///< prompt tokens served from the prefix cache
  std::string error;                 ///< set when the request failed (finish == error)
  int32_t error_status = 0;          ///< HTTP status for the error (400, 503, 500, ...)
  std::string error_param;           ///< the request field to blame, when there is one
  std::vector<float> embedding;      ///< an embedding request's vector (with its final output)
  double cumulative_logprob = 0;     ///< beam search: the beam's summed logprob (final output)
};

/// What /detokenize reads: token ids, and the model whose tokenizer reads them.
struct detokenize_request {
  std::string model;  ///< the served name; empty: the default model
  std::vector<int32_t> tokens;
};

}  // namespace actorllm
