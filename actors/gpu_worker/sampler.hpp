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

  /// Speculative decoding: verifies `drafts` (k tokens proposed after the sequence's last
  /// token) against `rows`, k + 1 logits rows of `vocab` (row i: the model's logits for the
  /// token after draft i - 1; row 0 after the last real token), each modified in place.
  /// Returns the accepted drafts, then one token drawn where the first draft was rejected or,
  /// with all accepted, from the last row: 1 to k + 1 results. Greedy: a draft is accepted
  /// when it is the argmax, so the tokens are exactly those of plain greedy decoding.
  /// Sampling: rejection sampling (Leviathan et al. 2023, Chen et al. 2023) for a proposal
  /// that is certain (the proposers here are deterministic: an n-gram lookup, a greedy draft
  /// model): draft d is accepted with probability p(d), and on rejection the token is drawn
  /// from p with d removed, renormalised, so every emitted token is distributed exactly as
  /// p, the draw sample() would make. Penalties see each accepted token before the next row.
  std::vector<sample_result> verify(std::span<float> rows, int64_t vocab,
                                    std::span<const int32_t> drafts, const sampling_params& params,
                                    std::span<const int32_t> prompt_tokens, sampler_state& state);

  /// The log-probability of `chosen` under the row's distribution (log-softmax, in double),
  /// its rank and the top `num_top` (most likely first, ties to the lower id). Sampled tokens
  /// are scored on the processed row (penalties, no temperature), prompt tokens on the raw one.
  token_logprob logprob_of(std::span<const float> logits, int32_t chosen, int32_t num_top);

 private:
  /// The tokens a non-greedy draw picks among after temperature, top_k, top_p and min_p:
  /// order_[0, n) best first, with unnormalised weights probs_[0, n); returns n.
  int32_t candidates(std::span<const float> logits, const sampling_params& params);
  /// A draw from candidates(); `excluded` (a candidate index, or -1) gets no weight.
  int32_t draw(int32_t num_candidates, int32_t excluded, sampler_state& state);
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
