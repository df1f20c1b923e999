#pragma once
/// Builds the actor engine from a config: one router, and per replica a scheduler, a
/// cache_engine and its workers (one per device, device_slots; CPU workers share the host), plus
/// the gateway behind engine_client. Replicas can be added or drained at run time; workers of other
/// processes join through CAF's middleman (publish / remote_actor). Shutting down stops every
/// actor.
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/engine_setup/engine_setup.hpp"
#include "actors/scheduler/scheduler_actor.hpp"
#include "actors/system/device_slots.hpp"
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
  /// Loads the model once and starts config.parallel.replicas replicas, on the backend that
  /// --device selects (select_backend).
  explicit engine_system(const engine_config& config);
  /// The same on a given backend (tests place replicas through a provider of their own).
  engine_system(const engine_config& config, std::shared_ptr<const backend_provider> backend);
  /// From a model already loaded and sized (a server of several models checks each one's KV
  /// pools against its share before any worker allocates them). `metrics`: a registry shared
  /// with the other models' engines, each series labelled with its model_name (null: its own).
  explicit engine_system(std::unique_ptr<engine_setup> setup,
                         std::shared_ptr<metrics_registry> metrics = nullptr);
  ~engine_system();
  engine_system(const engine_system&) = delete;
  engine_system& operator=(const engine_system&) = delete;

  engine_client& client() { return *client_; }
  const engine_setup& setup() const { return *setup_; }
  caf::actor_system& system() { return system_; }
  router_actor router() const { return router_; }

  /// Spawns one more local replica and returns its index once it serves (-1: its workers
  /// failed to start). New requests may go to it at once.
  int32_t add_replica();
  /// The two halves of add_replica: numbers a new replica (state starting) and places its
  /// workers on free devices, from device `first` on when given (-1: the router did not
  /// answer, or the devices are not free) ...
  int32_t reserve_replica(std::optional<int32_t> first = std::nullopt);
  /// ... then spawns its workers, waits until they are up and lets it serve. False when a
  /// worker failed to start: the replica is dead.
  bool start_replica(int32_t index);
  /// Stops sending new requests to a replica; it finishes what it has, then its actors stop
  /// and its memory is freed.
  bool drain_replica(int32_t index);
  /// Stops a replica now: its requests move to the other replicas (nothing is lost while
  /// another serves), its actors stop and its memory is freed.
  bool stop_replica(int32_t index);
  /// Local replicas that free devices can still take (INT32_MAX on the CPU backend).
  int32_t replicas_placeable();

  /// What a replica is made of, for the admin view.
  struct replica_shape {
    std::string device;  ///< "cpu", "cuda:0", "remote:<worker name>"
    int32_t workers = 0;
  };
  /// Every replica ever numbered, by index.
  /// A dead replica leaves the listings (replica_shapes, the engine view, /metrics, /health's
  /// body): its actors stopped if they were not, its record dropped. Nothing for a replica that
  /// is not listed.
  void forget_replica(int32_t index);
  std::vector<std::pair<int32_t, replica_shape>> replica_shapes();
  /// A snapshot of every replica (blocking, for tests and the stats logger).
  std::vector<replica_stats> stats();
  /// The workers spawned at start for `replica` (tests kill one to exercise supervision).
  std::vector<worker_actor> initial_workers(int32_t replica);

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
  /// Records an actor for shutdown, and as part of `replica` (-1: none) for stop_actors; one
  /// spawned once shutdown began, or for a replica already stopped, is told to exit at once.
  /// Called from the router's thread (a remote worker joins) and the schedulers' (a worker is
  /// respawned) as well as the caller's.
  void own(caf::actor actor, int32_t replica = -1);
  /// Tells every actor of `replica` to exit (the router found it drained, or it was stopped).
  void stop_actors(int32_t replica);

  struct replica_record {
    replica_shape shape;
    std::vector<caf::actor> actors;  // scheduler, cache engine, workers (respawned ones too)
    bool stopped = false;
  };
  std::mutex owned_mutex_;
  std::vector<caf::actor> owned_;               // every actor this system spawned, for shutdown
  std::map<int32_t, replica_record> replicas_;  // under owned_mutex_
  device_slots devices_;                        // local replicas' devices, under owned_mutex_
  std::deque<int32_t> stopped_order_;           // stopped replicas, oldest first
  static constexpr size_t max_stopped_listed = 8;
  bool stopped_ = false;  // shutdown began (under owned_mutex_)
};

}  // namespace actorllm
