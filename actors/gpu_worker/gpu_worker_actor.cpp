#include "actors/gpu_worker/gpu_worker_actor.hpp"

#include "actors/gpu_worker/draft_model_proposer.hpp"

namespace actorllm {

worker_actor::behavior_type gpu_worker(worker_actor::stateful_pointer<gpu_worker_state> self,
                                       std::shared_ptr<llama_model> model,
                                       std::shared_ptr<const backend_provider> backend,
                                       model_runner_config config, std::string name,
                                       mailbox_probe probe) {
  auto device_side = backend->make_backend(model, config);
  const int32_t vocab_size = model->config().vocab_size;
  self->state.runner =
      std::make_unique<model_runner>(std::move(model), config, std::move(device_side));
  attach_draft_model(*self->state.runner, *backend, config, vocab_size);
  self->state.info = {std::move(name), config.num_device_blocks, config.num_cpu_blocks,
                      config.block_size, self->state.runner->device()};
  self->state.probe = std::move(probe);
  self->state.probe.start(self);
  return {
      [self](step_atom, const step_plan& plan) -> caf::result<step_result> {
        try {
          return self->state.runner->execute(plan);
        } catch (const std::exception& e) {
          // The KV cache may be half-written: this worker is done; supervision respawns one.
          // Its device memory goes first, so that the fresh worker finds it free.
          self->state.runner.reset();
          self->quit(caf::sec::runtime_error);
          return caf::make_error(caf::sec::runtime_error,
                                 std::string("worker failed: ") + e.what());
        }
      },
      [self](info_atom) { return self->state.info; },
      [self](sample_atom) { self->state.probe.sample(self); },
  };
}

}  // namespace actorllm
