#pragma once
/// The worker shell: executes step plans with a model_runner on the backend the provider
/// builds (the CPU, or a CUDA device) and answers what it holds. A failure inside a step
/// becomes an error reply that the scheduler's supervision handles; the actor then exits so
/// that a fresh worker replaces it.
#include <memory>

#include "actors/actor_types.hpp"
#include "actors/gpu_worker/model_runner.hpp"
#include "actors/mailbox_probe.hpp"

namespace actorllm {

struct gpu_worker_state {
  // Not an aggregate: CAF would try to build the state from the actor pointer (C++20
  // parenthesized aggregate init).
  gpu_worker_state() = default;

  std::unique_ptr<model_runner> runner;
  worker_info info;
  mailbox_probe probe;
  static inline const char* name = "gpu_worker";
};

/// Builds its backend with `backend` (uploading the weights to a device, allocating the
/// pools); a failure there ends the actor with the error.
worker_actor::behavior_type gpu_worker(worker_actor::stateful_pointer<gpu_worker_state> self,
                                       std::shared_ptr<llama_model> model,
                                       std::shared_ptr<const backend_provider> backend,
                                       model_runner_config config, std::string name,
                                       mailbox_probe probe);

}  // namespace actorllm
