#include "actors/system/autoscaler.hpp"

#include <algorithm>
#include <cstdio>

namespace actorllm {

namespace {

bool is_remote(const replica_view& r) {
  return r.device.rfind("remote:", 0) == 0;
}

template <class... Args>
std::string format(const char* fmt, Args... args) {
  char line[160];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

}  // namespace

void autoscaler::changed(double now_s) {
  last_change_ = now_s;
  high_since_.reset();
  low_since_.reset();
}

scale_decision autoscaler::observe(double now_s, const std::vector<replica_view>& replicas) {
  int32_t serving = 0, starting = 0, draining = 0, waiting = 0;
  double kv_sum = 0;
  for (const auto& r : replicas) {
    if (r.state == "serving") {
      ++serving;
      waiting += r.num_waiting;
      kv_sum += r.kv_cache_usage;
    } else if (r.state == "starting") {
      ++starting;
    } else if (r.state == "draining") {
      ++draining;
      waiting += r.num_waiting;
    }
  }
  const int32_t replicas_up = serving + starting;
  const double kv_mean = serving > 0 ? kv_sum / serving : 0.0;

  scale_decision d;
  if (replicas_up < config_.min_replicas) {
    d.what = scale_decision::action::add;
    d.reason_kind = "below_min";
    d.reason = format("%d replicas serving or starting, below --autoscale MIN %d", replicas_up,
                      config_.min_replicas);
    changed(now_s);
    return d;
  }

  const bool queue_high = waiting > config_.waiting_per_replica * std::max(serving, 1);
  const bool kv_high = serving > 0 && kv_mean >= config_.kv_usage_high;
  const bool high = queue_high || kv_high;
  const bool low = waiting == 0 && kv_mean < config_.kv_usage_low;
  if (!high) high_since_.reset();
  if (!low) low_since_.reset();
  if (high && !high_since_) high_since_ = now_s;
  if (low && !low_since_) low_since_ = now_s;

  if (last_change_ && now_s - *last_change_ < config_.cooldown_s) return d;

  if (high && now_s - *high_since_ >= config_.up_window_s && replicas_up < config_.max_replicas &&
      starting == 0) {
    d.what = scale_decision::action::add;
    if (queue_high) {
      d.reason_kind = "queue";
      d.reason = format("%d requests waiting over %d serving replicas for %.1f s", waiting, serving,
                        now_s - *high_since_);
    } else {
      d.reason_kind = "kv_cache";
      d.reason = format("mean KV cache use %.2f at or above %.2f for %.1f s", kv_mean,
                        config_.kv_usage_high, now_s - *high_since_);
    }
    changed(now_s);
    return d;
  }

  if (low && now_s - *low_since_ >= config_.down_window_s && serving > config_.min_replicas &&
      starting == 0 && draining == 0) {
    // The local serving replica with the fewest requests; the newest on a tie.
    const replica_view* target = nullptr;
    for (const auto& r : replicas) {
      if (r.state != "serving" || is_remote(r)) continue;
      if (!target || r.num_running + r.num_waiting <= target->num_running + target->num_waiting)
        target = &r;
    }
    if (!target) return d;
    d.what = scale_decision::action::drain;
    d.replica = target->id;
    d.reason_kind = "low_load";
    d.reason = format("nothing waiting and mean KV cache use %.2f below %.2f for %.1f s", kv_mean,
                      config_.kv_usage_low, now_s - *low_since_);
    changed(now_s);
  }
  return d;
}

}  // namespace actorllm
