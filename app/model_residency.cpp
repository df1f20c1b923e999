#include "app/model_residency.hpp"

#include <algorithm>

#include "actors/system/kv_split.hpp"

namespace actorllm::app {
namespace {

/// The idle models, least recently used (longest idle) first; ties by name, so the choice
/// does not depend on the order models are listed in.
std::vector<const resident_model*> idle_lru_first(const std::vector<resident_model>& resident) {
  std::vector<const resident_model*> idle;
  for (const auto& m : resident)
    if (!m.busy) idle.push_back(&m);
  std::sort(idle.begin(), idle.end(), [](const auto* a, const auto* b) {
    return a->idle_s != b->idle_s ? a->idle_s > b->idle_s : a->name < b->name;
  });
  return idle;
}

}  // namespace

room_plan plan_room(const std::vector<resident_model>& resident, int64_t bytes, int64_t kv_bytes,
                    const residency_limits& limits) {
  room_plan plan;
  if (limits.kv_bytes > 0 && kv_bytes > limits.kv_bytes) {
    plan.outcome = room_plan::verdict::never;
    plan.why = "its KV pools need " + mib(kv_bytes) + ", more than the " + mib(limits.kv_bytes) +
               " KV budget (--models-kv-budget)";
    return plan;
  }
  if (limits.memory_bytes > 0 && bytes > limits.memory_bytes) {
    plan.outcome = room_plan::verdict::never;
    plan.why = "it needs " + mib(bytes) + " (weights and KV pools), more than the " +
               mib(limits.memory_bytes) + " of --models-memory-budget";
    return plan;
  }
  int64_t count = static_cast<int64_t>(resident.size());
  int64_t used = 0;
  int64_t kv_used = 0;
  for (const auto& m : resident) used += m.bytes, kv_used += m.kv_bytes;
  const auto too_many = [&] { return limits.max_loaded > 0 && count + 1 > limits.max_loaded; };
  const auto too_big = [&] {
    return limits.memory_bytes > 0 && used + bytes > limits.memory_bytes;
  };
  const auto no_kv = [&] { return limits.kv_bytes > 0 && kv_used + kv_bytes > limits.kv_bytes; };
  for (const resident_model* m : idle_lru_first(resident)) {
    if (!too_many() && !too_big() && !no_kv()) break;
    plan.evict.push_back(m->name);
    --count;
    used -= m->bytes;
    kv_used -= m->kv_bytes;
  }
  if (too_many()) {
    plan.outcome = room_plan::verdict::wait;
    plan.why = std::to_string(count) + " busy models are loaded, the most --max-loaded-models (" +
               std::to_string(limits.max_loaded) + ") allows";
  } else if (too_big()) {
    plan.outcome = room_plan::verdict::wait;
    plan.why = "it needs " + mib(bytes) + ", and busy models hold " + mib(used) + " of the " +
               mib(limits.memory_bytes) + " of --models-memory-budget";
  } else if (no_kv()) {
    plan.outcome = room_plan::verdict::wait;
    plan.why = "its KV pools need " + mib(kv_bytes) + ", and busy models hold " + mib(kv_used) +
               " of the " + mib(limits.kv_bytes) + " KV budget";
  }
  // Nothing is unloaded for a load that must wait anyway: the idle models may serve meanwhile.
  if (plan.outcome == room_plan::verdict::wait) plan.evict.clear();
  return plan;
}

std::vector<std::string> expired_models(const std::vector<resident_model>& resident,
                                        const residency_limits& limits) {
  std::vector<std::string> out;
  if (limits.keep_alive_s <= 0) return out;
  for (const resident_model* m : idle_lru_first(resident))
    if (m->idle_s >= limits.keep_alive_s) out.push_back(m->name);
  return out;
}

}  // namespace actorllm::app
