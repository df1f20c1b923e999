#include "actors/http_gateway/http_gateway_actor.hpp"

namespace actorllm {

gateway_actor::behavior_type http_gateway(gateway_actor::stateful_pointer<gateway_state> self,
                                          router_actor router,
                                          std::function<void(std::vector<request_output>&)> deliver,
                                          mailbox_probe probe) {
  self->state.router = std::move(router);
  self->state.deliver = std::move(deliver);
  self->state.probe = std::move(probe);
  self->state.probe.start(self);
  return {
      [self](generate_atom, generate_request& req) {
        self->send(self->state.router, generate_atom::value, std::move(req),
                   caf::actor_cast<output_sink_actor>(self));
      },
      [self](abort_atom, const std::string& id) {
        self->send(self->state.router, abort_atom::value, id);
      },
      [self](outputs_atom, std::vector<request_output>& outs) { self->state.deliver(outs); },
      [self](sample_atom) { self->state.probe.sample(self); },
  };
}

}  // namespace actorllm
