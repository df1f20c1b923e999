#include "monitoring/http_metrics.hpp"

namespace actorllm {

http_metrics::http_metrics(metrics_registry& registry, std::string model_name)
    : requests_(registry.counter("http_requests_total", "HTTP responses, by path and status.")),
      model_name_(std::move(model_name)) {}

void http_metrics::on_request(std::string_view path, int status) {
  std::string label(path.substr(0, path.find('?')));
  {
    std::lock_guard lock(mutex_);
    if (!paths_.count(label)) {
      if (paths_.size() < max_paths)
        paths_.insert(label);
      else
        label = "other";
    }
  }
  requests_.Add({{"model_name", model_name_}, {"path", label}, {"status", std::to_string(status)}})
      .Increment();
}

}  // namespace actorllm
