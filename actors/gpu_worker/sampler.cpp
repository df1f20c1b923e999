#include "actors/gpu_worker/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "kernels/cpu/ops.hpp"

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
  // AVX-512 or AVX2 where the CPU has them: one value at a time it was 0.7 ms of a 32-stream
  // decode step (32 greedy rows of a 32000-word vocabulary).
  return static_cast<int32_t>(cpu::argmax(logits.data(), static_cast<int64_t>(logits.size())));
}

bool needs_processing(const sampling_params& p) {
  return !p.logit_bias.empty() || p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f ||
         p.frequency_penalty != 0.0f;
}

bool is_masked_greedy(const sampling_params& p) {
  return p.greedy() && p.logprobs < 0 && !p.beam.enabled && !needs_processing(p);
}

bool is_plain_greedy(const sampling_params& p) {
  return is_masked_greedy(p) && !p.structured.active();
}

sample_result sampler::sample(std::span<float> logits, const sampling_params& params,
                              std::span<const int32_t> prompt_tokens, sampler_state& state) {
  sample_result result;
  if (is_plain_greedy(params)) {
    // The common fast path: nothing to modify, nothing to report but the token.
    result.token_id = argmax(logits);
    ++state.output_counts[result.token_id];
    return result;
  }
  apply_penalties(logits, params, prompt_tokens, state.output_counts);
  result.token_id = params.greedy() ? argmax(logits) : draw(candidates(logits, params), -1, state);
  ++state.output_counts[result.token_id];
  if (params.logprobs >= 0) result.logprob = logprob_of(logits, result.token_id, params.logprobs);
  return result;
}

std::vector<sample_result> sampler::verify(std::span<float> rows, int64_t vocab,
                                           std::span<const int32_t> drafts,
                                           const sampling_params& params,
                                           std::span<const int32_t> prompt_tokens,
                                           sampler_state& state) {
  std::vector<sample_result> results;
  for (size_t i = 0; i <= drafts.size(); ++i) {
    std::span<float> row = rows.subspan(i * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    if (i == drafts.size()) {
      results.push_back(sample(row, params, prompt_tokens, state));  // every draft accepted
      break;
    }
    const int32_t draft = drafts[i];
    if (!is_plain_greedy(params)) apply_penalties(row, params, prompt_tokens, state.output_counts);
    int32_t token = draft;
    if (params.greedy()) {
      token = argmax(row);
    } else {
      const int32_t n = candidates(row, params);
      double total = 0.0, draft_weight = 0.0;
      int32_t draft_index = -1;
      for (int32_t c = 0; c < n; ++c) {
        total += probs_[c];
        if (order_[c] == draft) draft_index = c, draft_weight = probs_[c];
      }
      std::uniform_real_distribution<double> uniform(0.0, 1.0);
      if (draft_index < 0 || uniform(state.rng) >= draft_weight / total)
        token = draw(n, draft_index, state);  // rejected: p with the draft removed
    }
    ++state.output_counts[token];
    sample_result& result = results.emplace_back();
    result.token_id = token;
    if (params.logprobs >= 0) result.logprob = logprob_of(row, token, params.logprobs);
    if (token != draft) break;
  }
  return results;
}

int32_t sampler::candidates(std::span<const float> logits, const sampling_params& params) {
  // Candidates sorted by logit; top_k then top_p then min_p shrink the set.
  const auto vocab = static_cast<int32_t>(logits.size());
  const float max_logit = *std::max_element(logits.begin(), logits.end());
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
  return cut;
}

int32_t sampler::draw(int32_t num_candidates, int32_t excluded, sampler_state& state) {
  double kept_total = 0.0;
  for (int32_t i = 0; i < num_candidates; ++i) kept_total += i == excluded ? 0.0f : probs_[i];
  std::uniform_real_distribution<double> uniform(0.0, kept_total);
  double r = uniform(state.rng);
  int32_t chosen = num_candidates - 1 == excluded && num_candidates > 1 ? num_candidates - 2
                                                                        : num_candidates - 1;
  for (int32_t i = 0; i < num_candidates; ++i) {
    if (i == excluded) continue;
    r -= probs_[i];
    if (r < 0) {
      chosen = i;
      break;
    }
  }
  return order_[chosen];
}

token_logprob sampler::logprob_of(std::span<const float> logits, int32_t chosen, int32_t num_top) {
  // Log-probabilities are those of the processed (penalised, unscaled) distribution.
  const auto vocab = static_cast<int32_t>(logits.size());
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double log_sum = 0.0;
  for (float l : logits) log_sum += std::exp(static_cast<double>(l - max_logit));
  log_sum = std::log(log_sum) + max_logit;
  token_logprob result;
  result.token_id = chosen;
  result.logprob = static_cast<float>(logits[chosen] - log_sum);
  result.rank = 1 + static_cast<int32_t>(std::count_if(
                        logits.begin(), logits.end(), [&](float l) { return l > logits[chosen]; }));
  const int32_t top = std::min(num_top, vocab);
  order_.resize(vocab);
  std::iota(order_.begin(), order_.end(), 0);
  std::partial_sort(order_.begin(), order_.begin() + top, order_.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (int32_t i = 0; i < top; ++i) {
    result.top_ids.push_back(order_[i]);
    result.top_logprobs.push_back(static_cast<float>(logits[order_[i]] - log_sum));
  }
  return result;
}

}  // namespace actorllm
