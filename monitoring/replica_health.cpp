#include "monitoring/replica_health.hpp"

namespace actorllm {

replica_health::replica_health(metrics_registry& registry, std::string model_name)
    : up_(registry.gauge("replica_up",
                         "1 while an engine replica serves, 0 while it is down or "
                         "restarting its workers.")),
      unhealthy_(
          registry
              .gauge("replicas_unhealthy",
                     "Engine replicas down or restarting; /health answers 503 while above 0.")
              .Add({{"model_name", model_name}})),
      model_name_(std::move(model_name)) {}

replica_health::entry& replica_health::at(int32_t replica) {
  auto& e = replicas_[replica];
  if (e.label.empty()) e.label = "replica " + std::to_string(replica);
  return e;
}

void replica_health::publish(int32_t replica, const entry& e) {
  up_.Add({{"model_name", model_name_}, {"replica", std::to_string(replica)}})
      .Set(e.what == state::serving ? 1 : 0);
  int32_t n = 0;
  for (const auto& [i, r] : replicas_) n += r.what == state::restarting || r.what == state::down;
  unhealthy_.Set(n);
}

void replica_health::set_serving(int32_t replica, std::string label) {
  std::lock_guard lock(mutex_);
  auto& e = at(replica);
  e = entry{std::move(label), state::serving, {}, {}};
  publish(replica, e);
}

void replica_health::worker_down(int32_t replica, int32_t rank, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto& e = at(replica);
  if (e.what == state::down || e.what == state::retired) return;
  e.missing_ranks.insert(rank);
  e.what = state::restarting;
  e.reason = reason;
  publish(replica, e);
}

void replica_health::worker_up(int32_t replica, int32_t rank) {
  std::lock_guard lock(mutex_);
  auto& e = at(replica);
  e.missing_ranks.erase(rank);
  if (e.what != state::restarting || !e.missing_ranks.empty()) return;
  e.what = state::serving;
  e.reason.clear();
  publish(replica, e);
}

void replica_health::set_down(int32_t replica, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto& e = at(replica);
  e.what = state::down;
  e.reason = reason;
  e.missing_ranks.clear();
  publish(replica, e);
}

void replica_health::forget(int32_t replica) {
  std::lock_guard lock(mutex_);
  replicas_.erase(replica);
  up_.Remove(&up_.Add({{"model_name", model_name_}, {"replica", std::to_string(replica)}}));
}

void replica_health::set_retired(int32_t replica) {
  std::lock_guard lock(mutex_);
  auto& e = at(replica);
  e.what = state::retired;
  e.reason.clear();
  e.missing_ranks.clear();
  publish(replica, e);
}

std::string replica_health::problems() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& [i, e] : replicas_) {
    if (e.what != state::restarting && e.what != state::down) continue;
    if (!out.empty()) out += "; ";
    out += e.label + (e.what == state::down ? " is down" : " is restarting its workers") +
           (e.reason.empty() ? "" : " (" + e.reason + ")");
  }
  return out;
}

int32_t replica_health::num_unhealthy() const {
  std::lock_guard lock(mutex_);
  int32_t n = 0;
  for (const auto& [i, e] : replicas_) n += e.what == state::restarting || e.what == state::down;
  return n;
}

int32_t replica_health::num_serving() const {
  std::lock_guard lock(mutex_);
  int32_t n = 0;
  for (const auto& [i, e] : replicas_) n += e.what == state::serving;
  return n;
}

}  // namespace actorllm
