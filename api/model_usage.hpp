#pragma once
/// Which requests each model of a server has in flight, and since when each is idle: what
/// draining waits for, what least-recently-used eviction and --keep-alive read, and how an
/// abort finds the one engine that runs the request. Thread-safe; plain C++.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/generate_request.hpp"

namespace actorllm::api {

/// Always owned by a shared_ptr: the wrapped callbacks hold it.
class model_usage : public std::enable_shared_from_this<model_usage> {
 public:
  using clock = std::chrono::steady_clock;

  /// Called, outside the book's lock, when a model's last request in flight ends.
  void on_idle(std::function<void(const std::string& model)> callback);

  /// Request `id` (unique across the server) starts on `model`. Returns `on_output` wrapped:
  /// the request ends once every one of its `n` choices sent its last delta, or one failed.
  std::function<void(request_output)> begin(const std::string& id, const std::string& model,
                                            int32_t n,
                                            std::function<void(request_output)> on_output);
  /// Request `id` ends (aborted, or its last delta arrived); false when it was not in flight.
  bool end(const std::string& id);
  /// The model running request `id`, while it is in flight.
  std::optional<std::string> model_of(const std::string& id) const;

  int32_t in_flight(const std::string& model) const;
  /// Seconds since `model`'s last request ended (or it was marked used); 0 while one runs.
  double idle_seconds(const std::string& model, clock::time_point now = clock::now()) const;
  /// `model` counts as used now (it was just loaded: idle from here, not from long ago).
  void touch(const std::string& model);

 private:
  struct per_model {
    int32_t in_flight = 0;
    clock::time_point last_used = clock::now();
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::string> running_;  // request id -> model
  std::map<std::string, per_model> models_;
  std::function<void(const std::string&)> on_idle_;
};

}  // namespace actorllm::api
