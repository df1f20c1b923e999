#pragma once
/// Folds streamed deltas into one whole answer per choice (text and ids concatenated, the last
/// finish reason), for callers that want results rather than streams: `generate`, the
/// offline benchmark, tests.
#include <vector>

#include "actors/common/generate_request.hpp"

namespace actorllm {

/// Appends `delta` to choices[delta.index], growing `choices` as needed.
inline void merge_output(std::vector<request_output>& choices, const request_output& delta) {
  if (choices.size() <= static_cast<size_t>(delta.index)) choices.resize(delta.index + 1);
  auto& c = choices[delta.index];
  c.request_id = delta.request_id;
  c.index = delta.index;
  c.text += delta.text;
  c.token_ids.insert(c.token_ids.end(), delta.token_ids.begin(), delta.token_ids.end());
  c.logprobs.insert(c.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
  c.num_prompt_tokens = delta.num_prompt_tokens;
  c.num_generated_tokens = delta.num_generated_tokens;
  if (delta.finish == finish_reason::none) return;
  c.finish = delta.finish;
  c.stop_reason = delta.stop_reason;
  c.error = delta.error;
  c.error_status = delta.error_status;
}

/// The final output of a refused request: finish_reason::error with its HTTP status.
inline request_output error_output(const std::string& request_id, std::string message,
                                   int32_t status) {
  request_output out;
  out.request_id = request_id;
  out.finish = finish_reason::error;
  out.error = std::move(message);
  out.error_status = status;
  return out;
}

}  // namespace actorllm
