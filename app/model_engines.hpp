#pragma once
/// The engines of a server that serves several models: one engine_system (router, replicas,
/// gateway) per loaded model, all in one metrics registry, and the directory through which
/// the API reaches them. Models load at startup while they fit --max-loaded-models and
/// --models-memory-budget; the rest are listed unloaded and load on demand (a request names
/// one) or through the admin API. Loading one more unloads the least recently used idle
/// models first (model_residency); --keep-alive unloads a model idle that long; an unload
/// drains: requests in flight finish, new ones get 503 until the engine stops and its memory
/// is freed. Each model's KV pools are sized at load from the budget left (kv_split). A model
/// that fails to load is marked failed, with why, and the others serve.
///
/// One loader thread does every load and unload, so the model states change in one order;
/// the directory's demand hook and the admin calls only queue work for it and never block.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/system/engine_system.hpp"
#include "actors/system/kv_split.hpp"
#include "api/model_directory.hpp"
#include "app/model_residency.hpp"
#include "common/model_admin_port.hpp"
#include "config/served_models.hpp"
#include "monitoring/metrics_registry.hpp"

namespace actorllm::app {

struct model_engines_options {
  int64_t kv_budget_bytes = 0;  ///< what every model's device KV pools may take together (> 0)
  residency_limits limits;
  double load_timeout_s = 300;  ///< how long a request waits for its model to load
  /// The flags a model added through the admin API starts from (its own override them).
  engine_config base;
};

class model_engines final : public model_admin_port {
 public:
  using log_function = std::function<void(const char*, const std::string&)>;

  /// `log(level, line)`: the server's log.
  model_engines(std::vector<model_plan> plans, model_engines_options options, log_function log);
  ~model_engines() override;
  model_engines(const model_engines&) = delete;
  model_engines& operator=(const model_engines&) = delete;

  /// Loads, in order, the models that fit the limits (blocking until each serves or failed),
  /// then starts the loader: from here on models load on demand and by the admin API.
  void start();
  /// What the API serves through: every model, with its state.
  api::model_directory& directory() { return *directory_; }
  /// The first loaded model's engine (null when none loaded): the one the replica admin API
  /// acts on.
  std::shared_ptr<engine_system> first_loaded() const;
  std::size_t num_loaded() const;
  /// Stops the loader and every engine (the server stopped first).
  void shutdown();

  // model_admin_port
  void models(std::function<void(std::vector<model_view>)> done) override;
  void load_model(load_model_request request, std::function<void(admin_outcome)> done) override;
  void unload_model(std::string name, std::function<void(admin_outcome)> done) override;

 private:
  struct model_slot {
    model_plan plan;
    std::shared_ptr<engine_system> engine;  // while loaded or draining
    int64_t weight_bytes = 0;               // resident once loaded; the folder's size before
    int64_t kv_bytes = 0;                   // its pools, while loaded
    std::string unload_reason;              // why it drains, for the log
  };
  struct pending_load {
    std::string name;
    std::chrono::steady_clock::time_point since;
    bool logged_wait = false;
  };

  // The loader thread's work; each takes mutex_ only to read or change slots_.
  void loader_loop();
  void step();
  /// Loads slot `name` now (blocking): true when it serves.
  bool load_now(const std::string& name);
  /// Stops draining models with nothing in flight; frees their memory.
  void finish_drains();
  /// The model stops taking requests and unloads once idle: false when it is not loaded.
  bool begin_unload(const std::string& name, std::string reason,
                    api::model_directory::drain_kind kind);
  void unload_now(const std::string& name);
  /// Plans room for the queued loads and loads those that fit, in order.
  void load_pending();

  std::vector<resident_model> residents() const;
  /// Bytes a model not yet loaded is expected to take: its weights' files and a KV share.
  /// Under mutex_.
  int64_t expected_bytes(const model_slot& slot) const;
  int64_t expected_kv_bytes(const model_slot& slot) const;
  /// What loading `name` now takes (room_plan), beside the models loaded.
  room_plan room_for(const std::string& name) const;
  /// The limits with the KV budget.
  residency_limits limits() const;
  void queue_load(const std::string& name);
  /// The admin API's load: queues it (202) or says why not.
  admin_outcome start_load(load_model_request request);
  void wake();
  model_slot* slot_of(const std::string& name);

  model_engines_options options_;
  log_function log_;
  std::shared_ptr<metrics_registry> metrics_ = std::make_shared<metrics_registry>();
  std::shared_ptr<api::model_directory> directory_ = std::make_shared<api::model_directory>();

  mutable std::mutex mutex_;  // slots_, split_, pending_, woken_, stopping_
  std::condition_variable wake_;
  std::vector<model_slot> slots_;  // in the order listed
  kv_split split_;
  std::deque<pending_load> pending_;
  bool woken_ = false;
  bool stopping_ = false;
  /// The loader thread's alone: when to hand freed memory back once more after an unload.
  std::optional<std::chrono::steady_clock::time_point> trim_due_;
  std::thread loader_;
};

/// The KV budget of several models when --models-kv-budget gives none: on the CPU, the
/// single-model default (min(free memory x --gpu-memory-utilization, 4 GiB)). 0 elsewhere:
/// there the budget must be given.
int64_t default_models_kv_budget(const engine_config& base);

/// Bytes of a model folder's weight files (*.safetensors, *.bin): what loading it reads.
int64_t model_folder_bytes(const std::string& folder);

}  // namespace actorllm::app
