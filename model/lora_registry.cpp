#include "model/lora_registry.hpp"

#include <algorithm>
#include <stdexcept>

namespace actorllm {

lora_registry::lora_registry(model_config_hf base, int32_t max_rank, int32_t max_adapters)
    : base_(std::move(base)), max_rank_(max_rank), max_adapters_(max_adapters) {}

int32_t lora_registry::load(const std::string& name, const std::string& path) {
  {
    const std::lock_guard lock(mutex_);
    if (by_name_.count(name)) throw std::runtime_error("adapter '" + name + "' is already loaded");
    if (static_cast<int32_t>(by_name_.size()) >= max_adapters_)
      throw std::runtime_error("at most " + std::to_string(max_adapters_) +
                               " adapters may be loaded; unload one first");
  }
  // Read outside the lock: a large adapter takes a while, and requests keep finding theirs.
  auto adapter = std::make_shared<lora_adapter>(lora_adapter::load(name, path, base_, max_rank_));
  const std::lock_guard lock(mutex_);
  if (by_name_.count(name)) throw std::runtime_error("adapter '" + name + "' is already loaded");
  adapter->id = next_id_++;
  // Ids of adapters nobody holds any longer are dropped here, so the table stays bounded.
  std::erase_if(by_id_, [](const auto& entry) { return entry.second.expired(); });
  by_id_[adapter->id] = adapter;
  by_name_[name] = {std::move(adapter), path};
  return next_id_ - 1;
}

bool lora_registry::unload(std::string_view name) {
  const std::lock_guard lock(mutex_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return false;
  by_name_.erase(it);
  return true;
}

std::shared_ptr<const lora_adapter> lora_registry::find(std::string_view name) const {
  const std::lock_guard lock(mutex_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.adapter;
}

std::shared_ptr<const lora_adapter> lora_registry::get(int32_t id) const {
  const std::lock_guard lock(mutex_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second.lock();
}

std::vector<lora_registry::listed> lora_registry::list() const {
  const std::lock_guard lock(mutex_);
  std::vector<listed> out;
  for (const auto& [name, entry] : by_name_) out.push_back({entry.adapter->id, name, entry.path});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

}  // namespace actorllm
