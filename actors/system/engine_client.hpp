#pragma once
/// The C++ client API of the engine (as vLLM's AsyncLLM): submit requests and receive their
/// streamed outputs through the actors. It is also the network layer's engine_port, so the
/// HTTP server and in-process users share one path. Thread-safe.
#include <atomic>
#include <caf/all.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/system/engine_monitoring.hpp"
#include "common/engine_port.hpp"
#include "model/lora_registry.hpp"

namespace actorllm {

class engine_client final : public engine_port {
 public:
  /// `monitoring` (may be null) renders /metrics and counts HTTP requests.
  /// `loras` (may be null): the adapters /v1/models lists, and that the runtime updates
  /// change where `lora_runtime_updates`.
  engine_client(caf::actor_system& system, router_actor router, model_info info,
                engine_monitoring* monitoring, std::shared_ptr<lora_registry> loras = nullptr,
                bool lora_runtime_updates = false);
  ~engine_client() override;

  // engine_port
  void submit(generate_request request, output_callback on_output) override;
  void abort(const std::string& request_id) override;
  void tokenize(generate_request request, std::function<void(tokenize_result)> done) override;
  void detokenize(detokenize_request request, std::function<void(detokenize_result)> done) override;
  bool healthy() const override { return healthy_.load(); }
  engine_health health() const override;
  model_info model() const override;
  /// r.base_model is this engine's model (the server's admission checked the name).
  lora_update_result load_lora_adapter(const lora_update_request& r) override;
  lora_update_result unload_lora_adapter(const std::string& name) override;
  std::string metrics_text() override {
    return monitoring_ ? monitoring_->render() : std::string();
  }
  std::string engine_stats_json() override {
    return monitoring_ ? monitoring_->engine_view_json() : std::string();
  }
  void on_http_request(std::string_view path, int status) override {
    if (monitoring_) monitoring_->on_http_request(path, status);
  }
  std::size_t num_waiting() const override { return num_waiting_.load(); }

  /// Blocking helper for tests and offline use: runs requests to completion and returns each
  /// one's outputs merged per choice (text and ids concatenated, the last finish reason).
  std::vector<std::vector<request_output>> generate(const std::vector<generate_request>& requests);

  void set_healthy(bool healthy) { healthy_.store(healthy); }
  std::size_t num_in_flight() const;

 private:
  void deliver(std::vector<request_output>& outputs);

  struct pending {
    output_callback callback;
    int32_t num_open_choices = 1;
    bool started = false;
  };
  /// Where the gateway (its own thread) delivers outputs: this client until its destructor
  /// lets go, under the lock, so that no delivery runs into a client being destroyed.
  struct delivery {
    std::mutex mutex;
    engine_client* client = nullptr;
  };
  caf::actor_system& system_;
  std::shared_ptr<delivery> delivery_ = std::make_shared<delivery>();
  router_actor router_;
  gateway_actor gateway_;
  model_info info_;
  engine_monitoring* monitoring_;
  std::shared_ptr<lora_registry> loras_;
  bool lora_runtime_updates_ = false;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, pending> pending_;
  std::atomic<bool> healthy_{true};
  std::atomic<std::size_t> num_waiting_{0};
};

}  // namespace actorllm
