#pragma once
/// Beam search's choices, apart from the blocks and sequences that carry the beams: which
/// candidates go on, which are complete, and how the answer ranks them (vLLM's beam search;
/// sampling_params.hpp, beam_search_params).
#include <cstdint>
#include <span>
#include <vector>

#include "common/generate_request.hpp"

namespace actorllm {

/// One running beam's step: its summed logprob so far and its next token's candidates.
struct beam_input {
  double cumulative_logprob = 0;
  const token_logprob* candidates = nullptr;  ///< top_ids / top_logprobs, most likely first
};

/// A candidate: beam `beam` (an index into the inputs) followed by `token`.
struct beam_candidate {
  int32_t beam = 0;
  int32_t token = 0;
  double cumulative_logprob = 0;
};

struct beam_step {
  std::vector<beam_candidate> running;   ///< at most `width`, highest summed logprob first
  std::vector<beam_candidate> complete;  ///< every candidate that is an end token
};

/// Every beam's candidates, the end tokens (`end_ids`, unless `ignore_eos`) complete, the
/// `width` others of highest summed logprob running on (ties: the earlier beam, then the more
/// likely candidate).
beam_step select_beams(std::span<const beam_input> beams, int32_t width,
                       std::span<const int32_t> end_ids, bool ignore_eos);

/// A finished or running hypothesis as the answer ranks it.
struct beam_hypothesis {
  std::vector<int32_t> output_ids;  ///< generated tokens (an end token only if kept in output)
  double cumulative_logprob = 0;
  finish_reason finish = finish_reason::length;
  bool ends_with_end_token = false;  ///< output_ids' last id is the end token
};

/// vLLM's score: the summed logprob over length^length_penalty, the length counting the
/// prompt and the output but not a final end token.
double beam_score(const beam_hypothesis& h, int32_t num_prompt_tokens, float length_penalty);

/// Orders `hypotheses` best first by beam_score (stable) and keeps the first `width`: a
/// complete beam outside the best `width` can never be among the answer's.
void keep_best(std::vector<beam_hypothesis>& hypotheses, int32_t width, int32_t num_prompt_tokens,
               float length_penalty);

}  // namespace actorllm
