#include "monitoring/routing_metrics.hpp"

namespace actorllm {

routing_metrics::routing_metrics(metrics_registry& registry, std::string model_name)
    : decisions_(registry.counter("router_decisions_total",
                                  "Requests routed to a replica, by the reason it was chosen.")),
      blocks_(registry.counter("router_prompt_blocks_total",
                               "Full prompt blocks of routed requests (kind=prompt) and those the "
                               "chosen replica held in its prefix cache (kind=cached).")),
      model_name_(std::move(model_name)) {
  // Every series from the start, at 0: a dashboard's rate() needs the zero.
  for (const char* reason : {"cache_hit", "least_load", "balance", "round_robin", "session"})
    decisions_.Add({{"model_name", model_name_}, {"reason", reason}});
  for (const char* kind : {"prompt", "cached"})
    blocks_.Add({{"model_name", model_name_}, {"kind", kind}});
}

router_view_row routing_metrics::view() const {
  const auto value = [this](prometheus::Family<prometheus::Counter>& family, const char* key,
                            const char* label) {
    return static_cast<int64_t>(family.Add({{"model_name", model_name_}, {key, label}}).Value());
  };
  router_view_row out;
  for (const char* reason : {"cache_hit", "least_load", "balance", "round_robin", "session"})
    out.decisions.emplace_back(reason, value(decisions_, "reason", reason));
  out.prompt_blocks = value(blocks_, "kind", "prompt");
  out.cached_blocks = value(blocks_, "kind", "cached");
  return out;
}

void routing_metrics::route(std::string_view reason, int32_t cached_blocks, int32_t prompt_blocks) {
  decisions_.Add({{"model_name", model_name_}, {"reason", std::string(reason)}}).Increment();
  blocks_.Add({{"model_name", model_name_}, {"kind", "prompt"}})
      .Increment(static_cast<double>(prompt_blocks));
  blocks_.Add({{"model_name", model_name_}, {"kind", "cached"}})
      .Increment(static_cast<double>(cached_blocks));
}

}  // namespace actorllm
