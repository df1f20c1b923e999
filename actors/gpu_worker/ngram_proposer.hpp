#pragma once
/// Speculative decoding's n-gram proposer (prompt lookup decoding): the tokens that followed
/// an earlier occurrence of the sequence's last n tokens are a good guess of what follows now,
/// when the output quotes or edits its prompt, repeats itself, or fills a template.
#include <cstdint>
#include <span>
#include <vector>

namespace actorllm {

struct ngram_options {
  int32_t min_n = 5;  ///< shortest suffix to look up (vLLM's prompt_lookup_min)
  int32_t max_n = 5;  ///< longest suffix to look up (vLLM's prompt_lookup_max)
};

/// Appends to `drafts` at most `k` tokens: those that followed the latest earlier occurrence
/// of the longest suffix of `tokens` with min_n <= n <= max_n tokens that occurred before.
/// Nothing when no such suffix recurs. O(tokens * max_n) at worst, no allocation.
void propose_ngram(std::span<const int32_t> tokens, int32_t k, const ngram_options& options,
                   std::vector<int32_t>& drafts);

}  // namespace actorllm
