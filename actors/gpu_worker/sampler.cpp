#include "actors/gpu_worker/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

namespace actorllm {

void apply_penalties(std::span<float> logits, const sampling_params& params,
                     std::span<const int32_t> prompt_tokens,
                     const std::unordered_map<int32_t, int32_t>& output_counts) {
  const auto vocab = static_cast<int32_t>(logits.size());
  for (auto [id, bias] : params.logit_bias)
    if (id >= 0 && id < vocab) logits[id] += bias;
  if (params.repetition_penalty != 1.0f) {
    // Every token seen in the prompt or the output: divide a positive logit, multiply a negative
    // one.
    std::unordered_set<int32_t> seen(prompt_tokens.begin(), prompt_tokens.end());
    for (const auto& [id, count] : output_counts) seen.insert(id);
    for (int32_t id : seen) {
      if (id < 0 || id >= vocab) continue;
      float& l = logits[id];
      l = l > 0 ? l / params.repetition_penalty : l * params.repetition_penalty;
    }
  }
  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    for (const auto& [id, count] : output_counts) {
      if (id < 0 || id >= vocab) continue;
      logits[id] -= params.frequency_penalty * static_cast<float>(count) + params.presence_penalty;
    }
  }
}

int32_t argmax(std::span<const float> logits) {
  // Two vectorizable passes (max, then its first index) beat one branchy pass.
  float best = -INFINITY;
#pragma omp simd reduction(max : best)
  for (size_t i = 0; i < logits.size(); ++i) best = std::max(best, logits[i]);
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] == best) return static_cast<int32_t>(i);
  return 0;
}

bool needs_processing(const sampling_params& p) {
  return !p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
         p.frequency_penalty != 0.0f;
}

bool is_masked_greedy(const sampling_params& p) {
  return p.greedy() && p.logprobs < 0 && !needs_processing(p);
}

bool is_plain_greedy(const sampling_params& p) {
  return is_masked_greedy(p) && !p.structured.active();
}

sample_result sampler::sample(std::span<float> logits, const sampling_params& params,
                              std::span<const int32_t> prompt_tokens, sampler_state& state) {
  const auto vocab = static_cast<int32_t>(logits.size());
  if (is_plain_greedy(params)) {
    // The common fast path: nothing to modify, nothing to report but the token.
    sample_result result;
    result.token_id = argmax(logits);
    ++state.output_counts[result.token_id];
    return result;
  }
  apply_penalties(logits, params, prompt_tokens, state.output_counts);

  // Log-probabilities are those of the processed (penalised, unscaled) distribution.
  sample_result result;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double log_sum = 0.0;
  if (params.logprobs >= 0) {
    for (float l : logits) log_sum += std::exp(static_cast<double>(l - max_logit));
    log_sum = std::log(log_sum) + max_logit;
  }

  int32_t chosen = 0;
  if (params.greedy()) {
    chosen = argmax(logits);
  } else {
    // Candidates sorted by logit; top_k then top_p then min_p shrink the set.
    order_.resize(vocab);
    std::iota(order_.begin(), order_.end(), 0);
    int32_t keep = vocab;
    if (params.top_k > 0) keep = std::min(keep, params.top_k);
    auto by_logit = [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    if (keep < vocab) {
      std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(), by_logit);
    } else {
      std::sort(order_.begin(), order_.end(), by_logit);
    }
    probs_.resize(keep);
    double total = 0.0;
    for (int32_t i = 0; i < keep; ++i) {
      probs_[i] = std::exp((logits[order_[i]] - max_logit) / params.temperature);
      total += probs_[i];
    }
    int32_t cut = keep;
    if (params.top_p < 1.0f) {
      double mass = 0.0;
      for (int32_t i = 0; i < keep; ++i) {
        mass += probs_[i] / total;
        if (mass >= params.top_p) {
          cut = i + 1;
          break;
        }
      }
    }
    if (params.min_p > 0.0f) {
      const float threshold = params.min_p * probs_[0];
      int32_t i = 1;
      while (i < cut && probs_[i] >= threshold) ++i;
      cut = i;
    }
    double kept_total = 0.0;
    for (int32_t i = 0; i < cut; ++i) kept_total += probs_[i];
    std::uniform_real_distribution<double> uniform(0.0, kept_total);
    double r = uniform(state.rng);
    chosen = order_[cut - 1];
    for (int32_t i = 0; i < cut; ++i) {
      r -= probs_[i];
      if (r < 0) {
        chosen = order_[i];
        break;
      }
    }
  }
  ++state.output_counts[chosen];

  result.token_id = chosen;
  if (params.logprobs >= 0) {
    result.logprob.token_id = chosen;
    result.logprob.logprob = static_cast<float>(logits[chosen] - log_sum);
    const int32_t top = std::min(params.logprobs, vocab);
    order_.resize(vocab);
    std::iota(order_.begin(), order_.end(), 0);
    std::partial_sort(order_.begin(), order_.begin() + top, order_.end(),
                      [&](int32_t a, int32_t b) {
                        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                      });
    for (int32_t i = 0; i < top; ++i) {
      result.logprob.top_ids.push_back(order_[i]);
      result.logprob.top_logprobs.push_back(static_cast<float>(logits[order_[i]] - log_sum));
    }
  }
  return result;
}

}  // namespace actorllm
