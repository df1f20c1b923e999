#pragma once
/// The operator's door into the engine (the admin API, `actorllm admin`, the autoscaler):
/// list the engine replicas, add local ones, drain one or stop one at once. net/ calls it
/// from its I/O threads, so every call answers through its callback, once, from any thread,
/// and never blocks the caller. Implementations are thread-safe.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace actorllm {

/// One engine replica as GET /admin/replicas shows it.
struct replica_view {
  int32_t id = 0;
  std::string device;  ///< "cpu", "cuda:0", or "remote:<worker name>"
  int32_t workers = 0;
  /// starting (its workers load), serving, draining (finishes what it has, takes nothing new)
  /// or dead (stopped, drained, or lost).
  std::string state;
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double kv_cache_usage = 0.0;  ///< device KV blocks in use, 0..1
};

/// What an admin call did: status 2xx, or the HTTP status and one line saying why not.
struct admin_outcome {
  int32_t status = 200;
  std::string error;
  std::vector<int32_t> ids;  ///< add_replicas: the new replicas' ids
  bool ok() const { return status >= 200 && status < 300; }
};

class admin_port {
 public:
  virtual ~admin_port() = default;

  virtual void replicas(std::function<void(std::vector<replica_view>)> done) = 0;
  /// Starts `count` local replicas on `device` ("cpu" or "cuda:K"; empty: the engine's own).
  /// Answers 202 with their ids as soon as they are starting; 400 for a count out of range or
  /// a device this server does not run on; 507 when they would not fit in memory.
  virtual void add_replicas(int32_t count, std::string device,
                            std::function<void(admin_outcome)> done) = 0;
  /// Stops routing new requests to replica `id`; it finishes its requests, then its actors
  /// stop and its KV pool is freed. 202; 404 for an unknown id, 409 when it is not serving.
  virtual void drain_replica(int32_t id, std::function<void(admin_outcome)> done) = 0;
  /// Stops replica `id` now: its requests move to other replicas and go on from the tokens
  /// they have (recomputed there), so nothing is lost while another replica serves. 202; 404
  /// for an unknown id, 409 unless it is serving or draining.
  virtual void stop_replica(int32_t id, std::function<void(admin_outcome)> done) = 0;
};

}  // namespace actorllm
