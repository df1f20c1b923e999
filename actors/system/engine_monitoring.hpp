#pragma once
/// The metrics and stats log of one server: the Prometheus registry and, per replica, the
/// engine metrics and the stats logger, fed through scheduler_hooks on each scheduler's own
/// thread. Only actor shells call into it; the cores return stats structs.
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/mailbox_probe.hpp"
#include "actors/scheduler/scheduler_actor.hpp"
#include "common/admin_port.hpp"
#include "monitoring/actor_metrics.hpp"
#include "monitoring/engine_metrics.hpp"
#include "monitoring/http_metrics.hpp"
#include "monitoring/replica_health.hpp"
#include "monitoring/routing_metrics.hpp"
#include "monitoring/scaling_metrics.hpp"

namespace actorllm {

class engine_monitoring {
 public:
  /// `registry`: where the series go, shared by the engines of several models (each series
  /// labelled with its model_name); null: a registry of its own.
  engine_monitoring(std::string model_name, int32_t max_model_len, double log_stats_interval,
                    std::shared_ptr<metrics_registry> registry = nullptr);

  /// The hooks a replica's scheduler shell calls; the replica's metrics are created here.
  scheduler_hooks hooks_for(int32_t replica, const cache_config_values& cache);
  /// A replica was built (or rebuilt around a worker that joined in a lost one's place) and
  /// serves; `label` names it in /health ("replica 1 (remote worker 'a')").
  void replica_serving(int32_t replica, std::string label);
  /// A replica's scheduler ended (called from the router's thread once it has): its gauges
  /// go to zero, and the requests it was timing are forgotten (they go on elsewhere). It is
  /// down (/health 503) unless it `retired`: its worker left on purpose.
  void replica_down(int32_t replica, const std::string& reason, bool retired);
  /// A dead replica leaves every listing (its grace time is over): /metrics, the engine view,
  /// /health's body.
  void forget_replica(int32_t replica);
  /// Empty while every replica serves; else one line naming each that does not.
  std::string health_problems() const { return health_.problems(); }
  int32_t num_serving_replicas() const { return health_.num_serving(); }
  void on_http_request(std::string_view path, int status) { http_.on_request(path, status); }
  void set_worker_up(const std::string& worker, bool up) { actors_.set_worker_up(worker, up); }
  void set_mailbox_depth(const std::string& actor, size_t depth) {
    actors_.set_mailbox_depth(actor, depth);
  }
  /// What reports `actor`'s mailbox depth to the gauge, sampled by the actor (mailbox_probe).
  mailbox_probe probe_for(std::string actor) {
    return {[this, actor = std::move(actor)](size_t depth) { set_mailbox_depth(actor, depth); }};
  }
  /// The whole registry: with a shared one, every model's series.
  std::string render() { return registry_->render(); }

  /// The replicas by state, as the replica manager last sampled them.
  void set_replica_states(const std::vector<replica_view>& replicas);
  /// The body of GET /v1/engine/stats (monitoring/engine_view.hpp). Any thread.
  std::string engine_view_json();
  /// `count` replicas added ("up") or drained / stopped ("down") for `reason` (a bounded set:
  /// admin, below_min, queue, kv_cache, low_load).
  void scale_event(std::string_view direction, std::string_view reason, int32_t count) {
    scaling_.scale_event(direction, reason, count);
  }
  /// The router chose a replica (router_hooks::on_route).
  void route(std::string_view reason, int32_t cached_blocks, int32_t prompt_blocks) {
    routing_.route(reason, cached_blocks, prompt_blocks);
  }

 private:
  struct replica_metrics {
    engine_metrics metrics;
    stats_logger logger;
    cache_config_info cache_info;
  };

  std::string model_name_;
  int32_t max_model_len_;
  double log_stats_interval_;
  std::shared_ptr<metrics_registry> registry_;
  http_metrics http_;
  actor_metrics actors_;
  scaling_metrics scaling_;
  routing_metrics routing_;
  replica_health health_;
  std::mutex mutex_;  // guards replicas_ (replicas are added at run time)
  std::map<int32_t, std::unique_ptr<replica_metrics>> replicas_;  // by replica index
  std::map<int32_t, replica_view> views_;  // the last sampled state of each (under mutex_)
  /// Replicas stopped on purpose, oldest first (under mutex_): past max_retired_kept the
  /// oldest one's series are dropped, so that /metrics stays bounded however often replicas
  /// come and go. A failed replica is kept (its /health and gauges matter).
  std::deque<int32_t> retired_;
  std::atomic<int32_t> max_ranks_seen_{1};  // workers per replica, for their series
  static constexpr size_t max_retired_kept = 8;
  void forget_old_retired(int32_t replica);
  /// Drops the replica's series, views, actors' gauges and /health entry.
  void forget_replicas(const std::vector<int32_t>& replicas);
};

}  // namespace actorllm
