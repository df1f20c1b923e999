#include "actors/request_router/replica_set.hpp"

#include <algorithm>

namespace actorllm {

int32_t replica_set::add() {
  replicas_.push_back({});
  return size() - 1;
}

bool replica_set::drain(int32_t index) {
  if (index < 0 || index >= size() || replicas_[index].dead) return false;
  replicas_[index].draining = true;
  return true;
}

void replica_set::mark_dead(int32_t index) {
  if (index >= 0 && index < size()) replicas_[index].dead = true;
}

void replica_set::revive(int32_t index) {
  if (index >= 0 && index < size()) replicas_[index] = {};
}

std::optional<int32_t> replica_set::pick() const {
  std::optional<int32_t> best;
  for (int32_t i = 0; i < size(); ++i) {
    const auto& r = replicas_[i];
    if (r.dead || r.draining) continue;
    if (!best || r.outstanding_tokens < replicas_[*best].outstanding_tokens) best = i;
  }
  return best;
}

void replica_set::charge(int32_t index, int64_t num_tokens) {
  replicas_.at(index).outstanding_tokens += num_tokens;
}

void replica_set::release(int32_t index, int64_t num_tokens) {
  auto& r = replicas_.at(index);
  r.outstanding_tokens = std::max<int64_t>(0, r.outstanding_tokens - num_tokens);
}

int32_t replica_set::num_usable() const {
  return static_cast<int32_t>(std::count_if(
      replicas_.begin(), replicas_.end(), [](const replica& r) { return !r.dead && !r.draining; }));
}

}  // namespace actorllm
