#pragma once
/// The request router's choices, as metrics: each decision by its reason, and the prompt
/// blocks the chosen replicas held (cached / prompt: the router's cache-hit ratio).
///
///   actorllm:router_decisions_total{reason="cache_hit|least_load|balance|round_robin|session"}
///   actorllm:router_prompt_blocks_total{kind="prompt|cached"}
///
/// Thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "monitoring/engine_view.hpp"
#include "monitoring/metrics_registry.hpp"

namespace actorllm {

class routing_metrics {
 public:
  routing_metrics(metrics_registry& registry, std::string model_name);

  /// One request routed for `reason` to a replica holding `cached_blocks` of its
  /// `prompt_blocks` full prompt blocks.
  void route(std::string_view reason, int32_t cached_blocks, int32_t prompt_blocks);
  /// What route() counted, for the engine view.
  router_view_row view() const;

 private:
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& blocks_;
  std::string model_name_;
};

}  // namespace actorllm
