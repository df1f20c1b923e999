#pragma once
/// Speculative decoding with a draft model: a small model with the target's tokenizer guesses
/// the next k tokens greedily, one batched forward per token, on its own paged KV cache.
///
/// The draft's cache is private: its blocks are its own, allocated per sequence as the
/// sequence grows and released when the sequence ends, so the target's preemptions, swaps and
/// prefix sharing never touch it. What it holds for a sequence stays valid while the tokens it
/// was fed are the sequence's tokens; after a verification it keeps the longest prefix that
/// still matches and feeds the rest again. A draft that is wrong costs acceptance, never
/// correctness: the target verifies every proposal.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "actors/gpu_worker/draft_proposer.hpp"
#include "actors/gpu_worker/forward_backend.hpp"
#include "model/forward_batch.hpp"
#include "model/llama_model.hpp"

namespace actorllm {

class model_runner;

class draft_model_proposer final : public draft_proposer {
 public:
  /// `backend` holds the draft's pool of `num_blocks` blocks of `block_size` tokens.
  /// `max_token_id`: proposals stop before an id the target cannot take (>= its vocabulary).
  draft_model_proposer(std::shared_ptr<const llama_model> draft,
                       std::unique_ptr<forward_backend> backend, int32_t block_size,
                       int32_t num_blocks, int32_t max_token_id);

  void propose(const step_plan& plan, const std::vector<batch_sequence>& work,
               const sequence_mirror& mirror, step_result& result) override;

  int32_t num_free_blocks() const { return static_cast<int32_t>(free_blocks_.size()); }
  int32_t num_sequences() const { return static_cast<int32_t>(seqs_.size()); }

 private:
  struct draft_sequence {
    std::vector<int32_t> blocks;  ///< the draft's own block table
    std::vector<int32_t> fed;     ///< the token at each position whose draft KV exists
  };
  /// One sequence's part of the proposal loop.
  struct proposing {
    draft_sequence* state;
    sequence_sample* sample;
    int32_t k;                  ///< drafts wanted
    int32_t first;              ///< position of the first token fed this round
    std::vector<int32_t> feed;  ///< tokens fed this round
  };

  /// Grows `s` to slots for `num_positions` positions; false (nothing taken) when the pool is
  /// short.
  bool reserve(draft_sequence& s, int32_t num_positions);
  void release(draft_sequence& s);

  std::shared_ptr<const llama_model> draft_;
  std::unique_ptr<forward_backend> backend_;
  int32_t block_size_;
  int32_t max_token_id_;
  std::vector<int32_t> free_blocks_;
  std::unordered_map<seq_id, draft_sequence> seqs_;
  forward_batch batch_;
  std::vector<float> logits_;
};

/// Gives `runner` the draft model of `config` (config.draft_model; nothing when null), on a
/// backend of `provider` with config.num_draft_blocks blocks and no swap pool.
void attach_draft_model(model_runner& runner, const backend_provider& provider,
                        const model_runner_config& config, int32_t target_vocab_size);

}  // namespace actorllm
