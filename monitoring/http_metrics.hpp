#pragma once
/// HTTP requests served, by route and status: actorllm:http_requests_total{path,status}.
///
///   http.on_request("/v1/completions", 200);   // once per response
///
/// `path` should be the route (the path without its query), not a client's free text: every
/// distinct value is a series kept for the life of the server. Beyond max_paths distinct
/// paths, the rest are counted under path="other" so that a scan of random URLs cannot grow
/// the registry without bound. Thread-safe (the I/O threads call it).
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "monitoring/metrics_registry.hpp"

namespace actorllm {

class http_metrics {
 public:
  static constexpr std::size_t max_paths = 64;

  http_metrics(metrics_registry& registry, std::string model_name);

  void on_request(std::string_view path, int status);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  std::string model_name_;
  std::mutex mutex_;
  std::unordered_set<std::string> paths_;
};

}  // namespace actorllm
