#include "actors/gpu_worker/ngram_proposer.hpp"

#include <algorithm>

#include "actors/gpu_worker/draft_proposer.hpp"

namespace actorllm {

void propose_ngram(std::span<const int32_t> tokens, int32_t k, const ngram_options& options,
                   std::vector<int32_t>& drafts) {
  const auto num_tokens = static_cast<int64_t>(tokens.size());
  if (k <= 0) return;
  // The longest suffix first: a longer match predicts better.
  for (int64_t n = std::min<int64_t>(options.max_n, num_tokens - 1); n >= options.min_n && n >= 1;
       --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(num_tokens - n));
    // The latest earlier occurrence (it ends before the suffix starts, so at least one token
    // follows it): recent text is the likeliest to be repeated.
    for (int64_t start = num_tokens - n - 1; start >= 0; --start) {
      if (tokens[static_cast<size_t>(start)] != suffix[0] ||
          !std::equal(suffix.begin(), suffix.end(), tokens.begin() + start))
        continue;
      const int64_t from = start + n;
      const int64_t to = std::min(from + k, num_tokens);
      drafts.insert(drafts.end(), tokens.begin() + from, tokens.begin() + to);
      return;
    }
  }
}

void ngram_draft_proposer::propose(const step_plan& /*plan*/,
                                   const std::vector<batch_sequence>& work,
                                   const sequence_mirror& mirror, step_result& result) {
  for (const auto& [seq, sample] : proposals_wanted(work, result))
    propose_ngram(mirror.tokens(seq->seq), seq->num_lookahead, options_, sample->draft_token_ids);
}

std::unique_ptr<draft_proposer> make_ngram_proposer(const speculative_config& config) {
  if (config.method != speculative_method::ngram) return nullptr;
  return std::make_unique<ngram_draft_proposer>(
      ngram_options{config.prompt_lookup_min, config.prompt_lookup_max});
}

}  // namespace actorllm
