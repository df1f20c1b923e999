#pragma once
/// Elastic scaling, as metrics: how many replicas are in each state, and every change of
/// their number with its direction and reason.
///
///   actorllm:replicas{state="starting|serving|draining|dead"}
///   actorllm:scale_events_total{direction="up|down",
///   reason="admin|below_min|queue|kv_cache|low_load"}
///
/// Thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "monitoring/metrics_registry.hpp"

namespace actorllm {

class scaling_metrics {
 public:
  scaling_metrics(metrics_registry& registry, std::string model_name);

  /// The count of replicas per state; a state missing from `counts` reads 0.
  void set_replicas(const std::map<std::string, int32_t>& counts);
  /// `count` replicas were added ("up") or drained or stopped ("down"), for `reason`.
  void scale_event(std::string_view direction, std::string_view reason, int32_t count);

 private:
  prometheus::Family<prometheus::Gauge>& replicas_;
  prometheus::Family<prometheus::Counter>& events_;
  std::string model_name_;
};

}  // namespace actorllm
