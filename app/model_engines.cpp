#include "app/model_engines.hpp"

#include <algorithm>
#include <stdexcept>

#include "actors/gpu_worker/kv_budget.hpp"
#include "actors/system/worker_backend.hpp"

namespace actorllm::app {

model_engines::model_engines(std::vector<model_plan> plans, int64_t kv_budget_bytes,
                             std::function<void(const char*, const std::string&)> log)
    : plans_(std::move(plans)),
      split_(kv_budget_bytes, static_cast<int32_t>(plans_.size())),
      log_(std::move(log)),
      engines_(plans_.size()) {
  for (const auto& plan : plans_)
    if (auto error = directory_->add(plan.name, plan.config.model.model); !error.empty())
      throw std::invalid_argument(error);  // plan_models already refused both causes
}

model_engines::~model_engines() {
  shutdown();
}

void model_engines::load_all() {
  log_("INFO", std::to_string(plans_.size()) + " models share " + mib(split_.budget()) +
                   " of KV cache: each gets an even share of what is left as it loads");
  for (std::size_t i = 0; i < plans_.size(); ++i) load(i);
}

bool model_engines::load(std::size_t i) {
  const model_plan& plan = plans_[i];
  const std::string who = "model '" + plan.name + "': ";
  engine_config config = plan.config;
  // Every worker of every replica holds a pool of its own.
  const int64_t workers =
      int64_t{config.parallel.replicas} * std::max(1, config.parallel.tensor_parallel_size);
  const int64_t share = split_.share();
  const bool own_size =
      config.cache.num_gpu_blocks_override >= 0 || config.cache.kv_cache_memory_bytes >= 0;
  if (!own_size) config.cache.kv_cache_memory_bytes = share / workers;
  bool counted = false;  // the split has deducted (or refused) this model
  try {
    auto setup = std::make_unique<engine_setup>(engine_setup::load(config, select_backend(config)));
    const int64_t pools =
        int64_t{setup->runner.num_device_blocks} * setup->kv_block_bytes * workers;
    // Refused before any worker allocates its pool: nothing is loaded half-way.
    counted = true;
    if (auto why = split_.take(pools); !why.empty()) throw std::runtime_error(why);
    for (std::string rest = setup->describe(); !rest.empty();) {
      const auto nl = rest.find('\n');
      log_("INFO", who + rest.substr(0, nl));
      rest = nl == std::string::npos ? "" : rest.substr(nl + 1);
    }
    log_("INFO", who + "KV pools " + mib(pools) + " (" +
                     std::to_string(setup->runner.num_device_blocks) + " blocks x " +
                     std::to_string(workers) + " workers; " +
                     (own_size ? "sized by its own flags" : "share " + mib(share)) + "), " +
                     mib(split_.left()) + " of " + mib(split_.budget()) + " left");
    auto engine = std::make_shared<engine_system>(std::move(setup), metrics_);
    engines_[i] = engine;
    directory_->set_loaded(plan.name, std::shared_ptr<engine_port>(engine, &engine->client()));
    return true;
  } catch (const std::exception& e) {
    if (!counted) split_.skip();
    directory_->set_failed(plan.name, e.what());
    log_("ERROR", who + "failed to load" +
                      (own_size ? std::string() : " (its KV share: " + mib(share) + ")") + ": " +
                      e.what());
    return false;
  }
}

engine_system* model_engines::first_loaded() const {
  for (const auto& e : engines_)
    if (e) return e.get();
  return nullptr;
}

std::size_t model_engines::num_loaded() const {
  return static_cast<std::size_t>(
      std::count_if(engines_.begin(), engines_.end(), [](const auto& e) { return e != nullptr; }));
}

void model_engines::shutdown() {
  for (std::size_t i = 0; i < engines_.size(); ++i) {
    if (!engines_[i]) continue;
    directory_->set_unloaded(plans_[i].name);
    engines_[i]->shutdown();
  }
}

int64_t default_models_kv_budget(const engine_config& base) {
  if (select_backend(base)->device() != "cpu") return 0;
  constexpr int64_t max_default = int64_t{4} << 30;
  return std::min<int64_t>(max_default, static_cast<int64_t>(available_host_memory() *
                                                             base.cache.gpu_memory_utilization));
}

}  // namespace actorllm::app
