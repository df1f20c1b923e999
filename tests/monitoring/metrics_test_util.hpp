#pragma once
// Reading collected values back out of a metrics_registry, and one registry with every
// handle in use (what a running server exports).
#include <prometheus/metric_family.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "monitoring/actor_metrics.hpp"
#include "monitoring/engine_metrics.hpp"
#include "monitoring/http_metrics.hpp"
#include "monitoring/metrics_registry.hpp"

namespace actorllm::testing {

using label_map = std::map<std::string, std::string>;

inline const prometheus::MetricFamily* find_family(const std::vector<prometheus::MetricFamily>& all,
                                                   const std::string& name) {
  for (const auto& family : all)
    if (family.name == name) return &family;
  return nullptr;
}

// The series of `name` whose labels include every pair of `labels`.
inline std::optional<prometheus::ClientMetric> find_metric(const metrics_registry& registry,
                                                           const std::string& name,
                                                           const label_map& labels = {}) {
  auto all = registry.prometheus_registry()->Collect();
  const auto* family = find_family(all, name);
  if (!family) return std::nullopt;
  for (const auto& metric : family->metric) {
    std::size_t matched = 0;
    for (const auto& label : metric.label) {
      auto it = labels.find(label.name);
      if (it != labels.end() && it->second == label.value) ++matched;
    }
    if (matched == labels.size()) return metric;
  }
  return std::nullopt;
}

inline double counter_value(const metrics_registry& r, const std::string& name,
                            const label_map& labels = {}) {
  auto m = find_metric(r, name, labels);
  return m ? m->counter.value : -1.0;
}

inline double gauge_value(const metrics_registry& r, const std::string& name,
                          const label_map& labels = {}) {
  auto m = find_metric(r, name, labels);
  return m ? m->gauge.value : -1.0;
}

inline std::vector<double> bucket_bounds(const prometheus::ClientMetric& metric) {
  std::vector<double> bounds;
  for (const auto& bucket : metric.histogram.bucket) bounds.push_back(bucket.upper_bound);
  return bounds;
}

// One stats struct with every field set to something distinct.
inline scheduler_stats sample_stats() {
  scheduler_stats s;
  s.num_waiting = 3;
  s.num_running = 5;
  s.num_swapped = 1;
  s.num_preemptions = 2;
  s.num_scheduled_tokens = 40;
  s.num_scheduled_seqs = 5;
  s.prefix_cache_queries = 100;
  s.prefix_cache_hits = 30;
  s.device = {/*num_blocks=*/8, /*num_used=*/6, /*num_free=*/1, /*num_cached=*/1};
  s.cpu = {/*num_blocks=*/64, /*num_used=*/16, /*num_free=*/48, /*num_cached=*/0};
  return s;
}

// Every handle of a server, each with at least one series.
struct populated_registry {
  metrics_registry registry;
  engine_metrics engine{registry, {"stories260K", 0, 512}};
  http_metrics http{registry, "stories260K"};
  actor_metrics actors{registry, "stories260K"};
  cache_config_info cache_info{registry, "stories260K", 0};

  populated_registry() {
    engine.on_request_added("r1", 1, 0.0);
    step_plan plan;
    plan.new_seqs.push_back({"r1", 0, 0, 4, {}});
    engine.on_scheduled(plan, 0.5);
    request_output first;
    first.request_id = "r1";
    first.num_prompt_tokens = 4;
    first.num_generated_tokens = 1;
    engine.on_outputs({first}, 1.0);
    request_output last = first;
    last.num_generated_tokens = 2;
    last.finish = finish_reason::length;
    engine.on_outputs({last}, 1.1);
    engine.on_step(sample_stats(), 0.02);
    http.on_request("/v1/completions", 200);
    actors.set_mailbox_depth("scheduler-0", 2);
    actors.set_worker_up("worker-0-0", true);
    cache_info.set({16, 8, 64, 4.0});
  }
};

}  // namespace actorllm::testing
