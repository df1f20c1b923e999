#pragma once
/// Speculative decoding's proposers: at the end of a step, each sequence the plan asked
/// (scheduled_sequence::num_lookahead) gets draft tokens for the next step in its sample.
/// Proposals only have to be cheap and often right: the next step verifies every one of them
/// against the target model, so a wrong draft costs a forward slot, never a wrong token.
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/gpu_worker/ngram_proposer.hpp"
#include "actors/gpu_worker/sequence_mirror.hpp"
#include "common/step_plan.hpp"
#include "config/engine_config.hpp"

namespace actorllm {

class draft_proposer {
 public:
  virtual ~draft_proposer() = default;
  /// Fills the draft_token_ids of `result`'s samples whose sequence `work` (the step's work,
  /// in plan order) asked for proposals; `mirror` holds each sequence's tokens, this step's
  /// samples included. `plan` names the sequences that ended (finished_seq_ids).
  virtual void propose(const step_plan& plan, const std::vector<batch_sequence>& work,
                       const sequence_mirror& mirror, step_result& result) = 0;
};

/// The samples of `result` that asked for proposals, each with its work entry.
struct proposal_request {
  const batch_sequence* seq;
  sequence_sample* sample;
};
std::vector<proposal_request> proposals_wanted(const std::vector<batch_sequence>& work,
                                               step_result& result);

/// Prompt lookup: proposals from the sequence's own prompt and output (propose_ngram).
class ngram_draft_proposer final : public draft_proposer {
 public:
  explicit ngram_draft_proposer(const ngram_options& options) : options_(options) {}
  void propose(const step_plan& plan, const std::vector<batch_sequence>& work,
               const sequence_mirror& mirror, step_result& result) override;

 private:
  ngram_options options_;
};

/// The proposer `config` names; null when speculation is off. The draft model's proposer is
/// built by the worker that holds the draft (it needs the model and a KV pool).
std::unique_ptr<draft_proposer> make_ngram_proposer(const speculative_config& config);

}  // namespace actorllm
