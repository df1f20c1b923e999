#pragma once
/// A request as the scheduler holds it: a group of sequences that share a prompt. A request
/// starts with one sequence; when its prompt's last token is computed the worker samples
/// params.n tokens at once and the sequence forks into n (they share the prompt's blocks).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/scheduler/beam_search.hpp"
#include "actors/scheduler/block_manager.hpp"
#include "actors/scheduler/speculation_pacer.hpp"
#include "common/generate_request.hpp"
#include "common/prompt_image.hpp"
#include "common/sampling_params.hpp"

namespace actorllm {

enum class request_state { waiting, running, swapped, finished };

struct sequence {
  seq_id id = 0;
  int32_t index = 0;                ///< sample index in [0, n): the OpenAI choice index
  std::vector<int32_t> token_ids;   ///< prompt, then generated tokens
  int32_t num_computed_tokens = 0;  ///< tokens whose KV is in the sequence's blocks
  finish_reason finish = finish_reason::none;
  int32_t stop_token = -1;  ///< the stop_token_ids entry that ended the sequence, else -1

  // What the workers have been told, so that a plan carries only what changed.
  bool known_to_workers = false;
  int32_t num_tokens_sent = 0;
  int32_t num_blocks_sent = 0;
  bool table_replaced = true;  ///< next plan sends the whole block table
  /// Tokens the steps in flight will sample for it (n for a request's first sampling, else
  /// one per step; two when a step was planned ahead). Planned ahead, a sequence computes the
  /// position of its pending token: num_computed_tokens may pass num_tokens() by one.
  int32_t num_pending_samples = 0;

  // Speculative decoding (scheduled_sequence::draft_token_ids).
  std::vector<int32_t> draft_token_ids;  ///< the workers' proposals, verified next step
  int32_t num_drafts_in_flight = 0;      ///< drafts the step in flight verifies
  speculation_pacer pacer;

  // Beam search: this beam's summed logprob and, once sampled this round, its candidates.
  double cumulative_logprob = 0;
  token_logprob beam_candidates;
  bool has_beam_candidates = false;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  bool finished() const { return finish != finish_reason::none; }
};

struct request {
  std::string request_id;
  sampling_params params;
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;  ///< prompt tokens found in the prefix cache at admission
  int32_t max_output_tokens = 0;  ///< params.max_tokens, or what max_model_len leaves
  uint64_t arrival = 0;           ///< order of add_request calls
  request_state state = request_state::waiting;
  bool sampled = false;        ///< the first token(s) exist (so the sequences forked)
  std::vector<sequence> seqs;  ///< one until the first sampling, then params.n
  /// params.prompt_logprobs >= 0: the prompt tokens' logprobs (from the second token on),
  /// gathered over the prefill's chunks and sent with each sequence's first token.
  std::vector<token_logprob> prompt_logprobs;
  /// Beam search: the complete beams (ended by an end token), the best params.n kept.
  std::vector<beam_hypothesis> complete_beams;
  /// The prompt's images (a vision-language model), sent with each sequence introduced.
  std::vector<prompt_image> images;

  /// Whether the prefill must compute every prompt position (for its logits), so that no
  /// block of the prefix cache stands in for one.
  bool reads_prefix_cache() const { return params.prompt_logprobs < 0; }

  int32_t num_live_seqs() const {
    int32_t num_live = 0;
    for (const sequence& s : seqs) num_live += s.finished() ? 0 : 1;
    return num_live;
  }
  /// Sequences this request will run at once: n from its first sampling on.
  int32_t num_seqs_when_running() const {
    return sampled ? num_live_seqs() : std::max(1, params.n);
  }
};

}  // namespace actorllm
