#pragma once
/// The cache_engine shell: the replica's cache ledger. The block manager itself runs inside
/// the scheduler's core, because planning a step needs synchronous answers (can this request
/// grow? which request must yield?), as vLLM's scheduler calls its KV cache manager directly.
/// The scheduler reports each step's block facts here in one message; this actor keeps the
/// latest state and the cumulative prefix-cache counters, publishes utilization, and answers
/// stats queries without disturbing the step loop.
#include <functional>

#include "actors/actor_types.hpp"
#include "actors/mailbox_probe.hpp"

namespace actorllm {

struct cache_engine_state {
  // Not an aggregate: CAF would try to build the state from the actor pointer (C++20
  // parenthesized aggregate init).
  cache_engine_state() = default;

  cache_report last;
  int64_t num_blocks_swapped_in = 0;
  int64_t num_blocks_swapped_out = 0;
  int64_t num_blocks_copied = 0;
  /// Metrics hook (may be empty): the report and this actor's mailbox depth.
  std::function<void(const cache_report&, size_t mailbox_depth)> publish;
  mailbox_probe probe;
  static inline const char* name = "cache_engine";
};

cache_engine_actor::behavior_type cache_engine(
    cache_engine_actor::stateful_pointer<cache_engine_state> self,
    std::function<void(const cache_report&, size_t mailbox_depth)> publish, mailbox_probe probe);

}  // namespace actorllm
