#pragma once
/// The order of the scheduler's queues as a swappable object: who is admitted first and, in
/// reverse, who is preempted first.
#include <memory>

#include "actors/scheduler/request.hpp"
#include "config/engine_config.hpp"

namespace actorllm {

class queue_policy {
 public:
  virtual ~queue_policy() = default;
  /// Whether `a` is served before `b` (and so preempted after it). A strict weak order.
  virtual bool before(const request& a, const request& b) const = 0;
};

/// First come, first served: arrival order.
class fcfs_policy final : public queue_policy {
 public:
  bool before(const request& a, const request& b) const override;
};

/// Lower params.priority first, then arrival.
class priority_policy final : public queue_policy {
 public:
  bool before(const request& a, const request& b) const override;
};

std::unique_ptr<queue_policy> make_queue_policy(scheduling_policy policy);

}  // namespace actorllm
