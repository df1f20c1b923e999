#include "actors/request_router/replica_set.hpp"

#include <algorithm>

namespace actorllm {

const char* to_string(replica_state state) {
  switch (state) {
    case replica_state::starting:
      return "starting";
    case replica_state::serving:
      return "serving";
    case replica_state::draining:
      return "draining";
    case replica_state::dead:
      return "dead";
  }
  return "dead";
}

int32_t replica_set::add() {
  replicas_.push_back({});
  return size() - 1;
}

int32_t replica_set::reserve() {
  replicas_.push_back({});
  replicas_.back().state = replica_state::starting;
  return size() - 1;
}

bool replica_set::start_serving(int32_t index) {
  if (!contains(index) || replicas_[index].state != replica_state::starting) return false;
  replicas_[index].state = replica_state::serving;
  return true;
}

bool replica_set::drain(int32_t index) {
  if (!contains(index) || replicas_[index].state != replica_state::serving) return false;
  replicas_[index].state = replica_state::draining;
  return true;
}

void replica_set::mark_dead(int32_t index) {
  if (contains(index)) replicas_[index].state = replica_state::dead;
}

void replica_set::revive(int32_t index) {
  if (contains(index)) replicas_[index] = {};
}

std::optional<int32_t> replica_set::pick() const {
  std::optional<int32_t> best;
  for (int32_t i = 0; i < size(); ++i) {
    const auto& r = replicas_[i];
    if (r.state != replica_state::serving) continue;
    if (!best || r.outstanding_tokens < replicas_[*best].outstanding_tokens) best = i;
  }
  return best;
}

void replica_set::charge(int32_t index, int64_t num_tokens) {
  auto& r = replicas_.at(index);
  r.outstanding_tokens += num_tokens;
  ++r.num_requests;
}

void replica_set::release(int32_t index, int64_t num_tokens) {
  auto& r = replicas_.at(index);
  r.outstanding_tokens = std::max<int64_t>(0, r.outstanding_tokens - num_tokens);
  r.num_requests = std::max(0, r.num_requests - 1);
}

bool replica_set::take_drained(int32_t index) {
  if (!contains(index)) return false;
  auto& r = replicas_[index];
  if (r.state != replica_state::draining || r.num_requests > 0 || r.drained_reported) return false;
  r.drained_reported = true;
  return true;
}

int32_t replica_set::num_usable() const {
  return static_cast<int32_t>(
      std::count_if(replicas_.begin(), replicas_.end(),
                    [](const replica& r) { return r.state == replica_state::serving; }));
}

}  // namespace actorllm
