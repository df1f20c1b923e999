#pragma once
/// Turns one row of logits into the next token, as a request's sampling_params say:
/// logit_bias, repetition / presence / frequency penalties, temperature, top_k, top_p, min_p,
/// then a draw from the request's own generator (a seeded request gives the same tokens
/// every time). Also reports the chosen token's log-probability and the top-N.
#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/generate_request.hpp"
#include "common/sampling_params.hpp"

namespace actorllm {

/// Per-sequence sampling state that must persist across steps.
struct sampler_state {
  std::mt19937_64 rng;
  std::unordered_map<int32_t, int32_t> output_counts;  ///< generated token -> occurrences

  explicit sampler_state(uint64_t seed) : rng(seed) {}
};

struct sample_result {
  int32_t token_id = 0;
  token_logprob logprob;  ///< filled when params.logprobs >= 0
};

class sampler {
 public:
  /// Samples from `logits` (vocab), which is modified in place (penalties, temperature).
  /// `prompt_tokens` and the state's output counts feed the penalties.
  sample_result sample(std::span<float> logits, const sampling_params& params,
                       std::span<const int32_t> prompt_tokens, sampler_state& state);

 private:
  std::vector<int32_t> order_;  // reused index buffer
  std::vector<float> probs_;    // reused probability buffer
};

/// Index of the largest logit (the first one on ties).
int32_t argmax(std::span<const float> logits);
/// Whether penalties or a logit bias change the logits before sampling.
bool needs_processing(const sampling_params& params);
/// A draw that is just the argmax: greedy, no logprobs, nothing that changes the logits (no
/// penalties, no structured-output mask). The sampler then neither modifies nor copies the row.
bool is_plain_greedy(const sampling_params& params);
/// A draw that is the argmax of the logits after at most a structured-output mask: what a
/// device backend picks where the logits are (forward_backend::try_forward_greedy).
bool is_masked_greedy(const sampling_params& params);

/// Applies logit_bias and the three penalties in place (vLLM's semantics).
void apply_penalties(std::span<float> logits, const sampling_params& params,
                     std::span<const int32_t> prompt_tokens,
                     const std::unordered_map<int32_t, int32_t>& output_counts);

}  // namespace actorllm
