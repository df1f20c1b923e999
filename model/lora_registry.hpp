#pragma once
/// The LoRA adapters a server has loaded, by name (what requests give as `model`) and by id
/// (what a request's sampling_params::lora_id carries to the scheduler and the workers).
/// Thread-safe: the router, the workers and the HTTP layer share one.
///
/// Ids are never reused, so a name unloaded and loaded again is a new adapter with a new
/// prefix-cache salt. Unloading only forgets the name: a request that holds the adapter (the
/// router keeps the pointer find() gave until the request ends) keeps it alive, and the
/// workers still find it by id; the weights go with the last holder.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "model/lora_adapter.hpp"
#include "model/model_config.hpp"

namespace actorllm {

class lora_registry {
 public:
  /// Adapters are checked against `base` (the whole model's configuration), refusing ranks
  /// above `max_rank`; at most `max_adapters` are loaded at once.
  lora_registry(model_config_hf base, int32_t max_rank, int32_t max_adapters = 256);

  struct listed {
    int32_t id = 0;
    std::string name;
    std::string path;
  };

  /// Loads the PEFT folder `path` as `name` and returns its id. Throws std::runtime_error with
  /// one line: a bad adapter (lora_adapter::load), a name already loaded, or too many adapters.
  int32_t load(const std::string& name, const std::string& path);
  /// Forgets `name`; false when no adapter has it.
  bool unload(std::string_view name);
  /// The adapter served as `name` (null: none), alive while the pointer is held.
  std::shared_ptr<const lora_adapter> find(std::string_view name) const;
  /// The adapter with `id`, while it is loaded or held; null otherwise.
  std::shared_ptr<const lora_adapter> get(int32_t id) const;
  /// The loaded adapters, in the order they were loaded.
  std::vector<listed> list() const;

 private:
  struct loaded {
    std::shared_ptr<const lora_adapter> adapter;
    std::string path;
  };
  model_config_hf base_;
  int32_t max_rank_;
  int32_t max_adapters_;
  mutable std::mutex mutex_;
  int32_t next_id_ = 1;
  std::map<std::string, loaded, std::less<>> by_name_;
  std::map<int32_t, std::weak_ptr<const lora_adapter>> by_id_;
};

}  // namespace actorllm
