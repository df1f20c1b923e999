#pragma once
/// The worker's core on the CPU backend: holds the model, the device KV cache and the CPU
/// swap pool, and executes step plans: swaps and copies first, then one forward pass over
/// every scheduled sequence, then sampling. It keeps what the plan sends only once (each
/// sequence's tokens, block table, sampling parameters and generator state).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/gpu_worker/sampler.hpp"
#include "actors/scheduler/sequence_mirror.hpp"
#include "actors/scheduler/step_plan.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_model.hpp"

namespace actorllm {

struct model_runner_config {
  int32_t block_size = 16;
  int32_t num_device_blocks = 0;
  int32_t num_cpu_blocks = 0;
  uint64_t seed = 0;  ///< global seed for requests without their own
};

class model_runner {
 public:
  model_runner(std::shared_ptr<llama_model> model, const model_runner_config& config);

  /// Executes one plan. Throws std::runtime_error on an inconsistent plan (a broken protocol).
  step_result execute(const step_plan& plan);

  const llama_model& model() const { return *model_; }
  int32_t num_known_sequences() const { return mirror_.num_sequences(); }

 private:
  using sampler_key = std::pair<std::string, int32_t>;  // (request id, sample index)
  sampler_state& state_for(const batch_sequence& seq, int32_t index);

  std::shared_ptr<llama_model> model_;
  model_runner_config config_;
  kv_cache device_cache_;
  kv_cache cpu_cache_;
  sequence_mirror mirror_;
  /// Generator state per (request, sample index): survives the fork of a request's sequence.
  std::map<sampler_key, sampler_state> samplers_;
  std::unordered_map<seq_id, sampler_key> sampler_of_seq_;
  sampler sampler_;
  forward_batch batch_;
  forward_workspace workspace_;
  std::vector<float> logits_, row_;
};

}  // namespace actorllm
