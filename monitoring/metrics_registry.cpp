#include "monitoring/metrics_registry.hpp"

#include <prometheus/text_serializer.h>

namespace actorllm {
namespace {

std::string prefixed(std::string_view name) {
  std::string full(metric_prefix);
  full += name;
  return full;
}

}  // namespace

metrics_registry::metrics_registry()
    // Merge: the same name and labels give back the existing family (one per replica set).
    : registry_(
          std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Merge)) {}

std::string metrics_registry::render() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

prometheus::Family<prometheus::Counter>& metrics_registry::counter(std::string_view name,
                                                                   std::string_view help) {
  return prometheus::BuildCounter()
      .Name(prefixed(name))
      .Help(std::string(help))
      .Register(*registry_);
}

prometheus::Family<prometheus::Gauge>& metrics_registry::gauge(std::string_view name,
                                                               std::string_view help) {
  return prometheus::BuildGauge().Name(prefixed(name)).Help(std::string(help)).Register(*registry_);
}

prometheus::Family<prometheus::Histogram>& metrics_registry::histogram(std::string_view name,
                                                                       std::string_view help) {
  return prometheus::BuildHistogram()
      .Name(prefixed(name))
      .Help(std::string(help))
      .Register(*registry_);
}

}  // namespace actorllm
