#pragma once
/// What one engine step computes (scheduler -> workers) and what it produced (workers ->
/// scheduler). As vLLM v1's SchedulerOutput: a sequence is described in full once, later
/// plans carry only what changed (new tokens, new blocks, tokens to compute).
///
/// A worker executes a plan in this order: blocks_to_store, blocks_to_swap_out,
/// blocks_to_swap_in, blocks_to_load, blocks_to_copy, then one forward pass over `seqs`, then
/// sampling. A block released by a swap-out, or evicted from the prefix cache into the second
/// tier, may be reused by the same plan, so those copies must come first.
#include <cstdint>
#include <string>
#include <vector>

#include "common/generate_request.hpp"
#include "common/kv_ids.hpp"
#include "common/prompt_image.hpp"
#include "common/sampling_params.hpp"

namespace actorllm {

/// Introduces a sequence to the workers (once, the first time it is scheduled).
struct new_sequence {
  std::string request_id;
  seq_id seq = 0;
  int32_t index = 0;              ///< sample index in [0, n) (seeds, choice index)
  int32_t num_prompt_tokens = 0;  ///< the first tokens of the sequence are the prompt
  sampling_params params;
  /// The prompt's images (a vision-language model), each time a sequence of such a request is
  /// introduced: its prompt may be computed again (a recompute, a fork's preemption).
  std::vector<prompt_image> images;
};

/// One sequence's work in this step: compute the KV of positions
/// [num_computed_tokens, num_computed_tokens + num_scheduled_tokens) and, when num_samples > 0,
/// sample from the logits of the last of them.
///
/// Speculative decoding: a decoding sequence (num_scheduled_tokens 1, num_samples 1) may carry
/// draft tokens, proposed by the workers at the end of an earlier step. They sit at the
/// positions after its scheduled token and are computed with it; the workers verify them
/// against the model's own distribution and sample 1 + (accepted drafts) tokens. The KV slots
/// of rejected drafts hold garbage until they are written again. `num_lookahead` asks the
/// workers for that many proposals at the end of this step (sequence_sample::draft_token_ids).
struct scheduled_sequence {
  seq_id seq = 0;
  int32_t num_computed_tokens = 0;
  int32_t num_scheduled_tokens = 0;
  /// 0: a prefill chunk that does not reach the end (no token yet); 1: the usual; n: the first
  /// sampling of a request with n > 1 (one draw per sample index, from the same logits).
  int32_t num_samples = 0;
  std::vector<int32_t> new_token_ids;    ///< tokens the workers have not seen (all of a new one)
  std::vector<block_id> new_block_ids;   ///< appended to the block table, or the whole table
  bool replace_table = false;            ///< new_block_ids is the whole table (after a swap-in,
                                         ///< a recompute or a copy-on-write)
  std::vector<int32_t> draft_token_ids;  ///< proposals to verify (speculative decoding)
  int32_t num_lookahead = 0;             ///< proposals wanted for the next step
};

struct step_plan {
  uint64_t step = 0;
  std::vector<new_sequence> new_seqs;
  std::vector<scheduled_sequence> seqs;        ///< in scheduling order
  std::vector<block_copy> blocks_to_swap_out;  ///< (device src, cpu dst)
  std::vector<block_copy> blocks_to_swap_in;   ///< (cpu src, device dst)
  std::vector<block_copy> blocks_to_copy;      ///< (device src, device dst), copy-on-write
  /// The second KV tier: prefix blocks evicted from the device pool (device src, tier slot
  /// dst), and prefix hits read back (tier slot src, device dst). A worker checks a loaded
  /// block's contents against what it stored; on a mismatch it computes the block again in
  /// this step's forward (the sequence whose table holds it starts there) and reports it.
  std::vector<block_copy> blocks_to_store;
  std::vector<block_copy> blocks_to_load;
  std::vector<seq_id> finished_seq_ids;  ///< finished or aborted since the last plan
  int32_t num_scheduled_tokens = 0;

  /// Nothing for the workers to compute (a plan may still carry finished ids to forget).
  bool empty() const { return seqs.empty(); }
  /// Anything at all for the workers: work, blocks to move, or sequences to forget.
  bool needs_workers() const {
    return !seqs.empty() || !finished_seq_ids.empty() || !blocks_to_swap_out.empty() ||
           !blocks_to_swap_in.empty() || !blocks_to_copy.empty() || !blocks_to_store.empty() ||
           !blocks_to_load.empty();
  }
};

/// What one scheduled sequence produced. token_ids has num_samples entries (none for a
/// partial prefill, which sends a sample only for its prompt logprobs); logprobs is empty or
/// parallel to token_ids (params.logprobs >= 0). A sequence that verified drafts gets its accepted
/// drafts, then one token sampled where the first rejection was (or after the last draft):
/// consecutive tokens of that one sequence.
struct sequence_sample {
  seq_id seq = 0;
  std::vector<int32_t> token_ids;
  std::vector<token_logprob> logprobs;
  /// Proposals for the tokens after token_ids (at most the plan's num_lookahead; may be none).
  std::vector<int32_t> draft_token_ids;
  /// An embedding request's vector (sampling_params::pooling), with no token_ids.
  std::vector<float> embedding;
  /// params.prompt_logprobs >= 0, in a chunk of the prompt: the logprobs of prompt tokens
  /// [prompt_logprobs_from, prompt_logprobs_from + size) (from 1: the first token has none).
  /// Such a sample comes with every chunk, sampling or not (then without token_ids).
  std::vector<token_logprob> prompt_logprobs;
  int32_t prompt_logprobs_from = 0;
  /// Beam search: the next token's 2 n most likely (top_ids, top_logprobs; raw logprobs), from
  /// which the scheduler picks the beams. Such a sample has no token_ids.
  token_logprob beam_candidates;
};

struct step_result {
  uint64_t step = 0;
  std::vector<sequence_sample> seqs;  ///< sequences that sampled; others may be left out
  double worker_seconds = 0;  ///< the worker's own time on this step: moves, forward, sampling
  /// Computing the structured-output masks (beside the forward, so not all of it is waited for).
  double mask_seconds = 0;
  /// Loads of blocks_to_load whose contents did not match (tier slot, device block): computed
  /// again in this step instead.
  std::vector<block_copy> failed_loads;
  /// Images run through the vision tower for this step (those not in the encoder cache), and
  /// the time it took.
  int32_t num_encoded_images = 0;
  double encoder_seconds = 0;
};

}  // namespace actorllm
