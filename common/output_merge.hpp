#pragma once
/// Folds streamed deltas into one whole answer per choice (text and ids concatenated, the last
/// finish reason), for callers that want results rather than streams: `generate`, the
/// offline benchmark, tests.
#include <algorithm>
#include <vector>

#include "common/generate_request.hpp"

namespace actorllm {

/// Appends the later delta `next` of the same choice to `into`: text, ids, token texts and
/// logprobs concatenated, the latest counts and the finish of `next`.
inline void merge_delta(request_output& into, const request_output& next) {
  into.request_id = next.request_id;
  into.index = next.index;
  into.text += next.text;
  into.token_ids.insert(into.token_ids.end(), next.token_ids.begin(), next.token_ids.end());
  // token_texts pair up with logprobs; keep them aligned only when both sides have them.
  if (into.token_texts.size() == into.logprobs.size() &&
      next.token_texts.size() == next.logprobs.size()) {
    into.token_texts.insert(into.token_texts.end(), next.token_texts.begin(),
                            next.token_texts.end());
  }
  into.logprobs.insert(into.logprobs.end(), next.logprobs.begin(), next.logprobs.end());
  if (into.prompt_token_texts.empty()) {  // the prompt's come once, with the first delta
    into.prompt_logprobs = next.prompt_logprobs;
    into.prompt_token_texts = next.prompt_token_texts;
  }
  into.num_prompt_tokens = std::max(into.num_prompt_tokens, next.num_prompt_tokens);
  into.num_generated_tokens = next.num_generated_tokens;
  into.num_cached_tokens = std::max(into.num_cached_tokens, next.num_cached_tokens);
  if (next.finish == finish_reason::none) return;
  into.finish = next.finish;
  into.stop_reason = next.stop_reason;
  into.stop_token = next.stop_token;
  into.error = next.error;
  into.error_status = next.error_status;
  if (!next.embedding.empty()) into.embedding = next.embedding;
  into.cumulative_logprob = next.cumulative_logprob;
}

/// Appends `delta` to choices[delta.index], growing `choices` as needed.
inline void merge_output(std::vector<request_output>& choices, const request_output& delta) {
  if (choices.size() <= static_cast<size_t>(delta.index)) choices.resize(delta.index + 1);
  merge_delta(choices[delta.index], delta);
}

/// The final output of a refused request: finish_reason::error with its HTTP status.
inline request_output error_output(const std::string& request_id, std::string message,
                                   int32_t status, std::string param = {}) {
  request_output out;
  out.request_id = request_id;
  out.finish = finish_reason::error;
  out.error = std::move(message);
  out.error_status = status;
  out.error_param = std::move(param);
  return out;
}

}  // namespace actorllm
