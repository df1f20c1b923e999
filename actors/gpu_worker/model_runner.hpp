#pragma once
/// The worker's core: executes step plans on a forward_backend (the CPU or a CUDA device, which
/// owns the KV pools): block moves first, then one forward pass over every scheduled sequence,
/// then sampling on the host logits, or on the device where the backend can and no row needs
/// the host (try_sample_on_device). It keeps what the plan sends only once (each sequence's
/// tokens, block table, sampling parameters and generator state). A constrained sequence's
/// mask is computed while the forward runs and applied to its logits before sampling.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/gpu_worker/constraint_tracker.hpp"
#include "actors/gpu_worker/draft_proposer.hpp"
#include "actors/gpu_worker/embedding_pooler.hpp"
#include "actors/gpu_worker/forward_backend.hpp"
#include "actors/gpu_worker/image_inputs.hpp"
#include "actors/gpu_worker/sampler.hpp"
#include "actors/gpu_worker/sequence_mirror.hpp"
#include "common/step_plan.hpp"
#include "model/forward_batch.hpp"
#include "model/llama_model.hpp"

namespace actorllm {

class model_runner {
 public:
  /// On the CPU backend.
  model_runner(std::shared_ptr<llama_model> model, const model_runner_config& config);
  /// On `backend`, whose pools have config's sizes.
  model_runner(std::shared_ptr<llama_model> model, const model_runner_config& config,
               std::unique_ptr<forward_backend> backend);

  /// Executes one plan. Throws std::runtime_error on an inconsistent plan (a broken protocol)
  /// and whatever the backend throws (a device error).
  /// The result carries the time it took (worker_seconds).
  step_result execute(const step_plan& plan);

  const llama_model& model() const { return *model_; }
  int32_t num_known_sequences() const { return mirror_.num_sequences(); }
  /// "cpu" or "cuda:N".
  std::string device() const { return backend_->device(); }
  /// Replaces the proposer of speculative decoding (by default the config's n-gram lookup, or
  /// none): a draft model's, which its worker builds.
  void set_proposer(std::unique_ptr<draft_proposer> proposer) { proposer_ = std::move(proposer); }

 private:
  using sampler_key = std::pair<std::string, int32_t>;  // (request id, sample index)
  sampler_state& state_for(const batch_sequence& seq, int32_t index);
  /// Loads of the second tier that the backend refused: the sequences whose tables hold
  /// their blocks start this step's work at the first of them, computing them again.
  void recompute_failed_loads(const std::vector<block_copy>& failed,
                              std::vector<batch_sequence>& work) const;
  step_result run_plan(const step_plan& plan, std::vector<batch_sequence>& work);
  /// The LoRA adapter of `seq` (null: the base model), held from its first step to its end.
  const lora_adapter* adapter_for(const batch_sequence& seq);
  /// The masks of the last constraints_.prepare(work), by logits row, into row_masks_.
  void pack_masks(const std::vector<batch_sequence>& work);
  /// For a device shortcut: none when no row is constrained, else a call that waits for the
  /// masks computed beside the forward (their time into result.mask_seconds) and packs them.
  std::function<const row_token_masks&()> deferred_masks(const std::vector<batch_sequence>& work,
                                                         step_result& result);
  /// Every draw of the step made where the logits are (forward_backend::try_forward_sample),
  /// when each sampling sequence can (one sample, no drafts, can_draw_on_device) and the
  /// backend has the shortcut: then the tokens, constraints and output counts advance as the
  /// host path's would, into `result`, and true. False with nothing done otherwise.
  bool try_sample_on_device(const std::vector<batch_sequence>& work, step_result& result);

  std::shared_ptr<llama_model> model_;
  model_runner_config config_;
  std::unique_ptr<forward_backend> backend_;
  sequence_mirror mirror_;
  /// Generator state per (request, sample index): survives the fork of a request's sequence.
  std::map<sampler_key, sampler_state> samplers_;
  std::unordered_map<seq_id, sampler_key> sampler_of_seq_;
  sampler sampler_;
  constraint_tracker constraints_;            ///< structured output: matchers and masks
  std::unique_ptr<draft_proposer> proposer_;  ///< speculative decoding; null: none
  embedding_pooler pooler_;                   ///< embedding requests' hidden states
  std::unique_ptr<image_inputs> images_;      ///< a vision-language model's; null: text only
  std::unordered_map<seq_id, std::shared_ptr<const lora_adapter>> adapters_;  ///< by sequence
  std::vector<float> hidden_;
  forward_batch batch_;
  std::vector<float> logits_, row_;
  std::vector<int32_t> device_tokens_;  ///< the tokens a device shortcut drew, by logits row
  row_token_masks row_masks_;
  device_draws draws_;
};

}  // namespace actorllm
