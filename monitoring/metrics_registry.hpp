#pragma once
/// The one Prometheus registry of a server: the metric handles (engine_metrics, http_metrics,
/// actor_metrics, cache_config_info) register their families here, and GET /metrics renders
/// it. Every name carries the prefix `actorllm:`, as vLLM's carry `vllm:`.
///
/// Thread-safe: families may be registered, updated and rendered from any thread
/// (prometheus-cpp locks its families; counters and gauges are atomic).
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <string_view>

namespace actorllm {

/// The prefix of every metric this server exports.
inline constexpr std::string_view metric_prefix = "actorllm:";

/// Content-Type of render()'s output (Prometheus text exposition format 0.0.4).
inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

class metrics_registry {
 public:
  metrics_registry();

  /// All metrics in text format 0.0.4, for the body of GET /metrics.
  std::string render() const;

  /// Families by unprefixed name (`num_requests_running` becomes
  /// `actorllm:num_requests_running`). Registering a name again returns the same family, so
  /// that each replica adds its own labelled series to one family; registering it again as
  /// another type throws std::invalid_argument (a programming error).
  prometheus::Family<prometheus::Counter>& counter(std::string_view name, std::string_view help);
  prometheus::Family<prometheus::Gauge>& gauge(std::string_view name, std::string_view help);
  prometheus::Family<prometheus::Histogram>& histogram(std::string_view name,
                                                       std::string_view help);

  /// The underlying registry (for tests that inspect collected values, or an Exposer).
  const std::shared_ptr<prometheus::Registry>& prometheus_registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
};

}  // namespace actorllm
