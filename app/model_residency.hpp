#pragma once
/// Which models stay loaded: the rule behind --max-loaded-models, --models-memory-budget and
/// --keep-alive, as pure functions of what is loaded now, so that the loader (model_engines)
/// only carries the decisions out. A model is evicted only while idle (no request in flight,
/// not loading, not draining), least recently used first; a model that would need a busy one
/// gone waits for it instead of taking its memory.
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm::app {

struct residency_limits {
  int32_t max_loaded = 0;    ///< models loaded at once (0: no limit)
  int64_t memory_bytes = 0;  ///< weights and KV pools of the loaded models (0: no limit)
  int64_t kv_bytes = 0;      ///< KV pools of the loaded models (--models-kv-budget; 0: no limit)
  double keep_alive_s = 0;   ///< an idle model is unloaded after this long (0: never)
};

/// A model that holds memory now: loaded, loading or draining.
struct resident_model {
  std::string name;
  int64_t bytes = 0;     ///< its weights and KV pools (an estimate while it loads)
  int64_t kv_bytes = 0;  ///< its KV pools alone
  bool busy = false;     ///< requests in flight, loading or draining: not to be evicted now
  double idle_s = 0;     ///< seconds since its last request ended (when not busy)
};

/// What loading one more model takes.
struct room_plan {
  enum class verdict {
    fits,   ///< after unloading `evict` (possibly none), in that order
    wait,   ///< only once a busy model is idle or gone: try again then
    never,  ///< more than the limits allow with nothing else loaded
  };
  verdict outcome = verdict::fits;
  std::vector<std::string> evict;
  std::string why;  ///< wait and never: the numbers, in one line
};

/// Room for a model of `bytes` (`kv_bytes` of them its KV pools) beside `resident` (which
/// does not list it).
room_plan plan_room(const std::vector<resident_model>& resident, int64_t bytes, int64_t kv_bytes,
                    const residency_limits& limits);

/// The idle models that have been idle longer than --keep-alive, longest idle first.
std::vector<std::string> expired_models(const std::vector<resident_model>& resident,
                                        const residency_limits& limits);

}  // namespace actorllm::app
