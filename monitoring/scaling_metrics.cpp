#include "monitoring/scaling_metrics.hpp"

namespace actorllm {

scaling_metrics::scaling_metrics(metrics_registry& registry, std::string model_name)
    : replicas_(registry.gauge("replicas", "Engine replicas in each state.")),
      events_(registry.counter("scale_events_total",
                               "Replicas added (up) or drained and stopped (down), by reason.")),
      model_name_(std::move(model_name)) {
  set_replicas({});
}

void scaling_metrics::set_replicas(const std::map<std::string, int32_t>& counts) {
  for (const char* state : {"starting", "serving", "draining", "dead"}) {
    const auto it = counts.find(state);
    replicas_.Add({{"model_name", model_name_}, {"state", state}})
        .Set(it == counts.end() ? 0.0 : static_cast<double>(it->second));
  }
}

void scaling_metrics::scale_event(std::string_view direction, std::string_view reason,
                                  int32_t count) {
  events_
      .Add({{"model_name", model_name_},
            {"direction", std::string(direction)},
            {"reason", std::string(reason)}})
      .Increment(static_cast<double>(count));
}

}  // namespace actorllm
