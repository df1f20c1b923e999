#include "actors/system/cluster_registry_actor.hpp"

#include <caf/io/all.hpp>
#include <cstdio>

namespace actorllm {

cluster_actor::behavior_type cluster_registry(cluster_actor::pointer self,
                                              std::shared_ptr<const cluster_admission> admission,
                                              router_actor router) {
  return {
      [self, admission, router](join_atom, join_request& req,
                                worker_actor worker) -> caf::result<join_reply> {
        if (auto why = admission->refusal(req.secret, req.model); !why.empty()) {
          std::fprintf(stderr, "cluster: refused worker '%s': %s\n", req.info.name.c_str(),
                       why.c_str());
          return join_reply{false, -1, why};
        }
        auto rp = self->make_response_promise<join_reply>();
        self->request(router, std::chrono::seconds(30), join_atom::value, std::move(worker),
                      std::move(req.info))
            .then(
                [rp](int32_t replica) mutable {
                  rp.deliver(join_reply{true, replica, {}});
                },
                [rp](caf::error& e) mutable {
                  rp.deliver(
                      join_reply{false, -1, "the server could not add a replica: " + to_string(e)});
                });
        return rp;
      },
  };
}

std::variant<joined_cluster, std::string> join_cluster(caf::actor_system& system,
                                                       const std::string& host, uint16_t port,
                                                       join_request request, worker_actor worker) {
  auto join_point = system.middleman().remote_actor<cluster_actor>(host, port);
  if (!join_point)
    return "cannot reach " + host + ":" + std::to_string(port) + ": " +
           to_string(join_point.error());
  caf::scoped_actor self{system};
  std::variant<joined_cluster, std::string> out = std::string("no answer");
  // The server answers once the replica exists; a server that never answers must not hang us.
  self->request(*join_point, std::chrono::seconds(60), join_atom::value, std::move(request),
                std::move(worker))
      .receive(
          [&](join_reply& reply) {
            if (reply.accepted)
              out = joined_cluster{*join_point, reply.replica};
            else
              out = "the server refused this worker: " + reply.error;
          },
          [&](caf::error& e) { out = "the server did not answer the join: " + to_string(e); });
  return out;
}

}  // namespace actorllm
