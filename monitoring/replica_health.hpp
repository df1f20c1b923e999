#pragma once
/// Liveness of each engine replica, for /health and for two gauges:
///
///   actorllm:replica_up{model_name, replica}  1 while the replica serves, else 0
///   actorllm:replicas_unhealthy{model_name}   replicas down or restarting
///
///   health.set_serving(1, "replica 1 (remote worker 'a')");   // built, workers ready
///   health.worker_down(0, 0, "exit_reason(kill)");            // restarting until...
///   health.worker_up(0, 0);                                   // ...its workers are back
///   health.set_down(1, "the engine's worker failed: ...");    // ended for good
///   health.set_retired(1);                                    // left on purpose: not unhealthy
///   health.problems();   // "" when every replica serves, else one line naming each that does not
///   health.num_serving(); // /health is 200 while at least one does
///
/// Thread-safe: the schedulers report from their threads, the router from its own, and /health
/// reads from the network's.
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "monitoring/metrics_registry.hpp"

namespace actorllm {

class replica_health {
 public:
  replica_health(metrics_registry& registry, std::string model_name);

  /// The replica serves (again); `label` names it in problems() ("replica 1 (remote worker
  /// 'a')"). Forgets earlier trouble, as a worker joining in a lost one's place does.
  void set_serving(int32_t replica, std::string label);
  /// A worker (tensor-parallel rank) of the replica is lost and being replaced: restarting.
  void worker_down(int32_t replica, int32_t rank, const std::string& reason);
  /// A replacement worker is ready; the replica serves once none is missing.
  void worker_up(int32_t replica, int32_t rank);
  /// The replica ended for good (its scheduler is gone).
  void set_down(int32_t replica, const std::string& reason);
  /// The replica ended on purpose (its worker left cleanly): it no longer counts.
  void set_retired(int32_t replica);
  /// Forgets a retired replica altogether, its replica_up series included.
  void forget(int32_t replica);

  /// Empty while every replica serves; else why not, one clause per replica, "; "-separated.
  std::string problems() const;
  int32_t num_unhealthy() const;
  /// Replicas that serve now (neither restarting, down nor retired).
  int32_t num_serving() const;

 private:
  enum class state { serving, restarting, down, retired };
  struct entry {
    std::string label;
    state what = state::serving;
    std::string reason;
    std::set<int32_t> missing_ranks;
  };
  entry& at(int32_t replica);                     // under mutex_
  void publish(int32_t replica, const entry& e);  // under mutex_

  mutable std::mutex mutex_;
  std::map<int32_t, entry> replicas_;
  prometheus::Family<prometheus::Gauge>& up_;
  prometheus::Gauge& unhealthy_;
  std::string model_name_;
};

}  // namespace actorllm
