#pragma once
/// The one sampling contract: the bounds every sampling_params meets before it reaches a
/// scheduler, whichever door it came in by (the OpenAI, Anthropic and WebSocket readers in
/// net/, the offline engine, the router). They are vLLM's SamplingParams bounds, so a request
/// vLLM takes is taken here and one it refuses is refused with the same parameter named:
///
///   n in [1, 128] (our cap: a hostile n multiplies the work); temperature >= 0 (no upper
///   bound); top_p in (0, 1]; top_k -1, 0 (both: no limit) or at least 1; min_p in [0, 1];
///   presence and frequency penalties in [-2, 2]; repetition_penalty in (0, 2]; logit_bias
///   values in [-100, 100]; max_tokens at least 1 (-1: until the context is full); min_tokens
///   in [0, max_tokens]; logprobs and prompt_logprobs -1 (none) or at least 0;
///   truncate_prompt_tokens -1, 0 or at least 1. Every float must be finite (NaN fails).
///
/// What depends on the server (the vocabulary for token ids, --max-logprobs, the grammar
/// compiler) is checked after this, by the router.
#include <cmath>
#include <optional>
#include <string>

#include "common/sampling_params.hpp"

namespace actorllm {

/// Why a sampling_params breaks the contract: one line for the client and the parameter.
struct sampling_violation {
  std::string message;
  std::string param;
};

namespace detail {

inline bool within(float value, float lo, float hi) {
  return std::isfinite(value) && value >= lo && value <= hi;
}

}  // namespace detail

/// The first bound `p` breaks, or nothing.
inline std::optional<sampling_violation> check_sampling(const sampling_params& p) {
  using detail::within;
  auto broken = [](std::string message, std::string param) {
    return std::optional<sampling_violation>(
        sampling_violation{std::move(message), std::move(param)});
  };
  if (p.n < 1 || p.n > 128) return broken("n must be between 1 and 128", "n");
  if (!std::isfinite(p.temperature) || p.temperature < 0)
    return broken("temperature must be >= 0", "temperature");
  if (!std::isfinite(p.top_p) || !(p.top_p > 0 && p.top_p <= 1))
    return broken("top_p must be in (0, 1]", "top_p");
  if (p.top_k < -1) return broken("top_k must be -1 or 0 (disabled) or at least 1", "top_k");
  if (!within(p.min_p, 0, 1)) return broken("min_p must be in [0, 1]", "min_p");
  if (!within(p.presence_penalty, -2, 2))
    return broken("presence_penalty must be in [-2, 2]", "presence_penalty");
  if (!within(p.frequency_penalty, -2, 2))
    return broken("frequency_penalty must be in [-2, 2]", "frequency_penalty");
  if (!std::isfinite(p.repetition_penalty) ||
      !(p.repetition_penalty > 0 && p.repetition_penalty <= 2))
    return broken("repetition_penalty must be in (0, 2]", "repetition_penalty");
  for (const auto& [id, bias] : p.logit_bias)
    if (!within(bias, -100, 100))
      return broken("logit_bias values must be numbers in [-100, 100]", "logit_bias");
  if (p.max_tokens < 1 && p.max_tokens != -1)
    return broken("max_tokens must be at least 1", "max_tokens");
  if (p.min_tokens < 0 || (p.max_tokens != -1 && p.min_tokens > p.max_tokens))
    return broken("min_tokens must be in [0, max_tokens]", "min_tokens");
  if (p.logprobs < -1) return broken("logprobs must be at least 0", "logprobs");
  if (p.prompt_logprobs < -1)
    return broken("prompt_logprobs must be at least 0", "prompt_logprobs");
  if (p.beam.enabled) {
    if (!std::isfinite(p.beam.length_penalty))
      return broken("length_penalty must be a finite number", "length_penalty");
    // A beam's tokens are chosen by the search: nothing else may choose or score them.
    if (p.logprobs >= 0) return broken("beam search does not return logprobs", "logprobs");
    if (p.prompt_logprobs >= 0)
      return broken("beam search does not return prompt logprobs", "prompt_logprobs");
    if (p.structured.active())
      return broken("beam search does not follow a structured output", "response_format");
    if (p.pooling != pooling_type::none)
      return broken("an embedding request has no beams", "use_beam_search");
  }
  if (p.truncate_prompt_tokens < -1)
    return broken("truncate_prompt_tokens must be at least 1, or -1 for max_model_len",
                  "truncate_prompt_tokens");
  return std::nullopt;
}

}  // namespace actorllm
