#include "actors/gpu_worker/device_draws.hpp"

#include <algorithm>
#include <cmath>

namespace actorllm {

void device_draws::clear() {
  rows.clear();
  edit_offsets.assign(1, 0);
  edits.clear();
}

void device_draws::add(const sampling_params& p, std::span<const int32_t> prompt_tokens,
                       const std::unordered_map<int32_t, int32_t>& output_counts, float uniform,
                       int32_t vocab) {
  row_sampling& row = rows.emplace_back();
  row.temperature = p.temperature;
  row.top_k = p.top_k;
  row.top_p = p.top_p;
  row.min_p = p.min_p;
  row.repetition_penalty = p.repetition_penalty;
  row.presence_penalty = p.presence_penalty;
  row.frequency_penalty = p.frequency_penalty;
  row.uniform = p.greedy() ? 0.0f : uniform;

  // Every contribution as its own edit, then one edit per token (sorted, merged).
  scratch_.clear();
  auto in_vocab = [vocab](int32_t id) { return id >= 0 && id < vocab; };
  for (const auto& [id, bias] : p.logit_bias)
    if (in_vocab(id)) scratch_.push_back({id, bias, 0, 0});
  const bool repetition = p.repetition_penalty != 1.0f;
  const bool counted = p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  if (repetition)
    for (int32_t id : prompt_tokens)
      if (in_vocab(id)) scratch_.push_back({id, 0.0f, 0, 1});
  if (repetition || counted)
    for (const auto& [id, count] : output_counts)
      if (in_vocab(id)) scratch_.push_back({id, 0.0f, counted ? count : 0, repetition ? 1 : 0});
  // Stable: a token's biases add up in the request's order.
  std::stable_sort(scratch_.begin(), scratch_.end(),
                   [](const logit_edit& a, const logit_edit& b) { return a.token < b.token; });
  for (const logit_edit& e : scratch_) {
    const bool same_token =
        edits.size() > static_cast<size_t>(edit_offsets.back()) && edits.back().token == e.token;
    if (!same_token) {
      edits.push_back(e);
      continue;
    }
    logit_edit& merged = edits.back();
    merged.bias += e.bias;
    merged.output_count += e.output_count;  // one entry per token in output_counts
    merged.seen |= e.seen;
  }
  edit_offsets.push_back(static_cast<int32_t>(edits.size()));
}

bool can_draw_on_device(const sampling_params& p) {
  return p.logprobs < 0 && p.prompt_logprobs < 0 && p.pooling == pooling_type::none && !p.seed &&
         !p.beam.enabled;
}

float device_draw_uniform(std::mt19937_64& rng) {
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  return std::min(static_cast<float>(u), std::nextafter(1.0f, 0.0f));
}

}  // namespace actorllm
