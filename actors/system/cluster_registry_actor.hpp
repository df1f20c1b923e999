#pragma once
/// The join point of a server (--cluster-port): the one actor published to other processes,
/// so that a process that connects reaches nothing but `join`. It admits a worker that proves
/// the secret and serves the same model (cluster_admission), then asks the router to build a
/// replica around it; a refusal is answered, and logged, as one line naming what differs.
/// On the worker's side, join_cluster() connects and asks.
#include <memory>
#include <string>
#include <variant>

#include "actors/actor_types.hpp"
#include "actors/system/cluster_admission.hpp"

namespace actorllm {

cluster_actor::behavior_type cluster_registry(cluster_actor::pointer self,
                                              std::shared_ptr<const cluster_admission> admission,
                                              router_actor router);

/// A worker process's side: reaches the join point at host:port, asks to join with `request`
/// and `worker`, and waits for the answer (bounded). Returns the join point (monitor it: its
/// down message means the server went away) and the replica the worker serves, or one line
/// saying why not (unreachable, refused, no answer).
struct joined_cluster {
  cluster_actor join_point;
  int32_t replica = -1;
};
std::variant<joined_cluster, std::string> join_cluster(caf::actor_system& system,
                                                       const std::string& host, uint16_t port,
                                                       join_request request, worker_actor worker);

}  // namespace actorllm
