#pragma once
/// Builds the actor engine from a config: one router, and per replica a scheduler, a
/// cache_engine and its workers (one per device; CPU workers here), plus the gateway behind
/// engine_client. Replicas can be added or drained at run time; workers of other processes
/// join through CAF's middleman (publish / remote_actor). Shutting down stops every actor.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/engine/engine_setup.hpp"
#include "actors/scheduler/scheduler_actor.hpp"
#include "actors/system/engine_client.hpp"
#include "actors/system/engine_monitoring.hpp"

namespace actorllm {

/// The CAF configuration every actorllm process uses (message types, middleman, threads).
class engine_actor_config : public caf::actor_system_config {
 public:
  engine_actor_config();
};

class engine_system {
 public:
  /// Loads the model once and starts config.parallel.replicas replicas.
  explicit engine_system(const engine_config& config);
  ~engine_system();
  engine_system(const engine_system&) = delete;
  engine_system& operator=(const engine_system&) = delete;

  engine_client& client() { return *client_; }
  const engine_setup& setup() const { return *setup_; }
  caf::actor_system& system() { return system_; }
  router_actor router() const { return router_; }

  /// Spawns one more local replica; new requests may go to it at once. Returns its index.
  int32_t add_replica();
  /// Stops sending new requests to a replica; it finishes what it has.
  bool drain_replica(int32_t index);
  /// A snapshot of every replica (blocking, for tests and the stats logger).
  std::vector<replica_stats> stats();
  /// The workers spawned at start for `replica` (tests kill one to exercise supervision).
  std::vector<worker_actor> initial_workers(int32_t replica) const;

  /// Publishes the join point (cluster_registry) on host:port (0: any port) so that
  /// `actorllm worker --connect` can join: a worker must prove `secret` (empty: none; the
  /// caller checked that host is a loopback address) and serve the same model. Returns the
  /// bound port or an error message.
  std::variant<uint16_t, std::string> publish(uint16_t port, const std::string& host,
                                              const std::string& secret);

  engine_monitoring& monitoring() { return *monitoring_; }

  void shutdown();

 private:
  /// `label` names the replica in /health.
  scheduler_actor spawn_replica(int32_t index, std::vector<worker_actor> workers,
                                worker_factory respawn, scheduler_options options,
                                std::string label);
  worker_actor spawn_local_worker(int32_t replica, int32_t rank,
                                  std::shared_ptr<cpu::host_all_reduce> group);

  engine_actor_config actor_config_;
  caf::actor_system system_;
  std::unique_ptr<engine_setup> setup_;
  std::unique_ptr<engine_monitoring> monitoring_;
  std::shared_ptr<prompt_builder> prompts_;
  router_actor router_;
  std::unique_ptr<engine_client> client_;
  std::vector<std::vector<worker_actor>> initial_workers_;
  /// Records an actor for shutdown; one spawned once shutdown began is told to exit at once.
  /// Called from the router's thread (a remote worker joins) and the schedulers' (a worker is
  /// respawned) as well as the caller's.
  void own(caf::actor actor);

  std::mutex owned_mutex_;
  std::vector<caf::actor> owned_;  // every actor this system spawned, for shutdown
  bool stopped_ = false;           // shutdown began (under owned_mutex_)
  int32_t num_replicas_ = 0;
};

}  // namespace actorllm
