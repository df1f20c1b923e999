#pragma once
/// Health of the actor system: how many messages wait in each actor's mailbox, and whether
/// each worker is alive.
///
///   actors.set_mailbox_depth("scheduler-0", self->mailbox().size());
///   actors.set_worker_up("worker-0-0", false);               // on its down message
///
/// Actor and worker names are chosen by the shells at spawn time (a bounded set, e.g.
/// "router", "scheduler-<replica>", "cache_engine-<replica>", "worker-<replica>-<rank>").
/// Thread-safe: each actor may report from its own thread.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "monitoring/metrics_registry.hpp"

namespace actorllm {

class actor_metrics {
 public:
  actor_metrics(metrics_registry& registry, std::string model_name);

  void set_mailbox_depth(std::string_view actor, std::size_t depth);
  void set_worker_up(std::string_view worker, bool up);
  /// Every actor's last reported depth, by name.
  std::vector<std::pair<std::string, double>> mailbox_depths() const;
  /// Drops the mailbox series of every actor for which `gone(name)` holds (actors that
  /// stopped for good), so that an engine that churns replicas keeps a bounded /metrics.
  void forget_actors(const std::function<bool(std::string_view)>& gone);
  /// The same for the worker_up series of the workers named.
  void forget_worker(std::string_view worker);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, prometheus::Gauge*, std::less<>> depths_;  // the series of each
  prometheus::Family<prometheus::Gauge>& mailbox_depth_;
  prometheus::Family<prometheus::Gauge>& worker_up_;
  std::string model_name_;
};

/// The cache configuration as labels of a gauge with value 1, as vLLM's cache_config_info:
/// actorllm:cache_config_info{block_size, num_gpu_blocks, num_cpu_blocks, swap_space}, set by
/// each replica once its workers have measured the pools. Setting it again replaces the series.
struct cache_config_values {
  int32_t block_size = 0;
  int64_t num_gpu_blocks = 0;
  int64_t num_cpu_blocks = 0;
  double swap_space_gib = 0.0;
};

class cache_config_info {
 public:
  cache_config_info(metrics_registry& registry, std::string model_name, int32_t replica);

  void set(const cache_config_values& values);
  /// Takes its series out (the registry must outlive it).
  ~cache_config_info();
  cache_config_info(cache_config_info&&) = delete;

 private:
  prometheus::Family<prometheus::Gauge>& info_;
  std::string model_name_;
  int32_t replica_;
  prometheus::Gauge* current_ = nullptr;
};

}  // namespace actorllm
