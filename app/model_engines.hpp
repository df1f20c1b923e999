#pragma once
/// The engines of a server that serves several models: one engine_system (router, replicas,
/// gateway) per model, loaded in order, each one's KV pools sized from the budget left
/// (kv_split), all in one metrics registry, and the directory through which the API reaches
/// them. A model that fails to load (a bad folder, pools that do not fit) is marked failed,
/// with why, and the others serve.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/system/engine_system.hpp"
#include "actors/system/kv_split.hpp"
#include "api/model_directory.hpp"
#include "config/served_models.hpp"
#include "monitoring/metrics_registry.hpp"

namespace actorllm::app {

class model_engines {
 public:
  /// `log(level, line)`: the startup log. `kv_budget_bytes`: what every model's device KV
  /// pools may take together (> 0).
  model_engines(std::vector<model_plan> plans, int64_t kv_budget_bytes,
                std::function<void(const char*, const std::string&)> log);
  ~model_engines();
  model_engines(const model_engines&) = delete;
  model_engines& operator=(const model_engines&) = delete;

  /// Loads every model in order (blocking); each one serves as soon as it is loaded.
  void load_all();
  /// What the API serves through: every model, with its state.
  api::model_directory& directory() { return *directory_; }
  /// The first loaded model's engine (null when none loaded): the one the replica admin API
  /// and --cluster-port act on.
  engine_system* first_loaded() const;
  std::size_t num_loaded() const;
  /// Stops every engine (the server stopped first): the models leave the directory.
  void shutdown();

 private:
  /// Loads plans_[i] within the split: true when it serves.
  bool load(std::size_t i);

  std::vector<model_plan> plans_;
  kv_split split_;
  std::function<void(const char*, const std::string&)> log_;
  std::shared_ptr<metrics_registry> metrics_ = std::make_shared<metrics_registry>();
  std::shared_ptr<api::model_directory> directory_ = std::make_shared<api::model_directory>();
  std::vector<std::shared_ptr<engine_system>> engines_;  // by plan; null: not loaded
};

/// The KV budget of several models when --models-kv-budget gives none: on the CPU, the
/// single-model default (min(free memory x --gpu-memory-utilization, 4 GiB)). 0 elsewhere:
/// there the budget must be given.
int64_t default_models_kv_budget(const engine_config& base);

}  // namespace actorllm::app
