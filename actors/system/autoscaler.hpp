#pragma once
/// The autoscaling policy (a core: no actors, no clock of its own). Fed a snapshot of the
/// replicas every sampling interval, it answers whether to add a replica, drain one, or do
/// nothing, and why:
///   - below MIN replicas (serving or starting): add at once;
///   - load high (more waiting requests than waiting_per_replica per serving replica, or
///     mean KV use at or above kv_usage_high) for up_window_s, below MAX: add;
///   - load low (nothing waiting, mean KV use below kv_usage_low) for down_window_s, above
///     MIN, nothing starting or draining: drain the local replica holding the fewest
///     requests (the newest on a tie);
///   - after any change, nothing for cooldown_s (hysteresis: the thresholds of high and low
///     load are far apart, and a change must outlast its window).
/// Remote replicas count toward MAX and take load, but are never drained by it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/admin_port.hpp"
#include "config/engine_config.hpp"

namespace actorllm {

struct scale_decision {
  enum class action : uint8_t { none, add, drain };
  action what = action::none;
  int32_t replica = -1;  ///< drain: which one
  /// Bounded set, for the metric's label: below_min, queue, kv_cache, low_load.
  std::string reason_kind;
  std::string reason;  ///< one readable line with the numbers, for the log
};

class autoscaler {
 public:
  explicit autoscaler(const autoscale_config& config) : config_(config) {}

  /// The decision for the replicas as they are at `now_s` (seconds on any steady clock).
  /// A decision other than none starts the cool-down.
  scale_decision observe(double now_s, const std::vector<replica_view>& replicas);
  /// Someone else changed the replicas (the admin API), or an add was refused for memory:
  /// the cool-down starts now, and the windows start over.
  void changed(double now_s);

 private:
  autoscale_config config_;
  std::optional<double> high_since_, low_since_, last_change_;
};

}  // namespace actorllm
