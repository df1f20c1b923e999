#include "actors/scheduler/scheduling_policy.hpp"

namespace actorllm {

bool fcfs_policy::before(const request& a, const request& b) const {
  return a.arrival < b.arrival;
}

bool priority_policy::before(const request& a, const request& b) const {
  if (a.params.priority != b.params.priority) return a.params.priority < b.params.priority;
  return a.arrival < b.arrival;
}

std::unique_ptr<queue_policy> make_queue_policy(scheduling_policy policy) {
  switch (policy) {
    case scheduling_policy::priority:
      return std::make_unique<priority_policy>();
    case scheduling_policy::fcfs:
      break;
  }
  return std::make_unique<fcfs_policy>();
}

}  // namespace actorllm
