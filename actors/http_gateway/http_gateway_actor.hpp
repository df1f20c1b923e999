#pragma once
/// The gateway shell: the actor the network layer talks to (through engine_client, which
/// implements net/'s engine_port). It forwards new requests and aborts to the router, naming
/// itself as the client, and hands each batch of deltas to the deliver function, which calls
/// the callbacks the network layer registered.
#include <functional>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/mailbox_probe.hpp"

namespace actorllm {

struct gateway_state {
  // Not an aggregate: CAF would try to build the state from the actor pointer (C++20
  // parenthesized aggregate init).
  gateway_state() = default;

  router_actor router;
  std::function<void(std::vector<request_output>&)> deliver;
  mailbox_probe probe;
  static inline const char* name = "http_gateway";
};

gateway_actor::behavior_type http_gateway(gateway_actor::stateful_pointer<gateway_state> self,
                                          router_actor router,
                                          std::function<void(std::vector<request_output>&)> deliver,
                                          mailbox_probe probe);

}  // namespace actorllm
