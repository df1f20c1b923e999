#include "actors/scheduler/beam_search.hpp"

#include <algorithm>
#include <cmath>

namespace actorllm {

beam_step select_beams(std::span<const beam_input> beams, int32_t width,
                       std::span<const int32_t> end_ids, bool ignore_eos) {
  beam_step step;
  std::vector<beam_candidate> candidates;
  for (size_t b = 0; b < beams.size(); ++b) {
    const token_logprob& c = *beams[b].candidates;
    for (size_t k = 0; k < c.top_ids.size() && k < c.top_logprobs.size(); ++k) {
      const beam_candidate next{static_cast<int32_t>(b), c.top_ids[k],
                                beams[b].cumulative_logprob + c.top_logprobs[k]};
      const bool ends =
          !ignore_eos && std::find(end_ids.begin(), end_ids.end(), next.token) != end_ids.end();
      (ends ? step.complete : candidates).push_back(next);
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const beam_candidate& a, const beam_candidate& b) {
                     return a.cumulative_logprob > b.cumulative_logprob;
                   });
  if (static_cast<int32_t>(candidates.size()) > width) candidates.resize(width);
  step.running = std::move(candidates);
  return step;
}

double beam_score(const beam_hypothesis& h, int32_t num_prompt_tokens, float length_penalty) {
  const auto length = static_cast<double>(num_prompt_tokens) +
                      static_cast<double>(h.output_ids.size()) - (h.ends_with_end_token ? 1 : 0);
  return h.cumulative_logprob / std::pow(std::max(length, 1.0), length_penalty);
}

void keep_best(std::vector<beam_hypothesis>& hypotheses, int32_t width, int32_t num_prompt_tokens,
               float length_penalty) {
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < hypotheses.size(); ++i)
    order.emplace_back(beam_score(hypotheses[i], num_prompt_tokens, length_penalty), i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<beam_hypothesis> best;
  for (size_t i = 0; i < order.size() && static_cast<int32_t>(best.size()) < width; ++i)
    best.push_back(std::move(hypotheses[order[i].second]));
  hypotheses = std::move(best);
}

}  // namespace actorllm
