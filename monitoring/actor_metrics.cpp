#include "monitoring/actor_metrics.hpp"

#include <cstdio>

namespace actorllm {

actor_metrics::actor_metrics(metrics_registry& registry, std::string model_name)
    : mailbox_depth_(
          registry.gauge("actor_mailbox_depth", "Messages waiting in an actor's mailbox.")),
      worker_up_(registry.gauge("worker_up", "1 while a worker is alive, 0 once it is down.")),
      model_name_(std::move(model_name)) {}

void actor_metrics::set_mailbox_depth(std::string_view actor, std::size_t depth) {
  std::lock_guard lock(mutex_);
  auto it = depths_.find(actor);
  if (it == depths_.end())
    it = depths_
             .emplace(std::string(actor), &mailbox_depth_.Add({{"model_name", model_name_},
                                                               {"actor", std::string(actor)}}))
             .first;
  it->second->Set(static_cast<double>(depth));
}

std::vector<std::pair<std::string, double>> actor_metrics::mailbox_depths() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, series] : depths_) out.emplace_back(name, series->Value());
  return out;
}

void actor_metrics::forget_worker(std::string_view worker) {
  worker_up_.Remove(
      &worker_up_.Add({{"model_name", model_name_}, {"worker", std::string(worker)}}));
}

void actor_metrics::forget_actors(const std::function<bool(std::string_view)>& gone) {
  std::lock_guard lock(mutex_);
  for (auto it = depths_.begin(); it != depths_.end();) {
    if (!gone(it->first)) {
      ++it;
      continue;
    }
    mailbox_depth_.Remove(it->second);
    it = depths_.erase(it);
  }
}

void actor_metrics::set_worker_up(std::string_view worker, bool up) {
  worker_up_.Add({{"model_name", model_name_}, {"worker", std::string(worker)}}).Set(up ? 1 : 0);
}

cache_config_info::cache_config_info(metrics_registry& registry, std::string model_name,
                                     int32_t replica)
    : info_(registry.gauge("cache_config_info", "Cache configuration, as labels (value 1).")),
      model_name_(std::move(model_name)),
      replica_(replica) {}

cache_config_info::~cache_config_info() {
  if (current_) info_.Remove(current_);
}

void cache_config_info::set(const cache_config_values& values) {
  char swap_space[32];
  std::snprintf(swap_space, sizeof swap_space, "%g", values.swap_space_gib);
  if (current_) info_.Remove(current_);
  current_ = &info_.Add({{"model_name", model_name_},
                         {"replica", std::to_string(replica_)},
                         {"block_size", std::to_string(values.block_size)},
                         {"num_gpu_blocks", std::to_string(values.num_gpu_blocks)},
                         {"num_cpu_blocks", std::to_string(values.num_cpu_blocks)},
                         {"swap_space", swap_space}});
  current_->Set(1);
}

}  // namespace actorllm
