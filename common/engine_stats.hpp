#pragma once
/// What one engine replica's scheduler reports about itself each step: queue depths,
/// preemptions, the budget it used, prefix-cache counters and both block pools. Returned by
/// the scheduler core, carried in messages, read by monitoring/.
#include <cstdint>
#include <vector>

#include "common/kv_ids.hpp"

namespace actorllm {

/// Speculative decoding's counters since start (vLLM's spec_decode_* metrics).
struct speculation_stats {
  int64_t num_drafts = 0;           ///< verifications: a sequence's drafts checked in a step
  int64_t num_draft_tokens = 0;     ///< drafts verified
  int64_t num_accepted_tokens = 0;  ///< drafts accepted
  std::vector<int64_t> accepted_per_position;  ///< [i]: accepted drafts at draft position i
};

struct scheduler_stats {
  int32_t num_waiting = 0;  ///< requests
  int32_t num_running = 0;
  int32_t num_swapped = 0;
  int64_t num_preemptions = 0;       ///< since start
  int32_t num_scheduled_tokens = 0;  ///< by the last schedule()
  int32_t num_scheduled_seqs = 0;    ///< by the last schedule()
  int64_t prefix_cache_queries = 0;  ///< tokens, since start
  int64_t prefix_cache_hits = 0;     ///< tokens, since start
  pool_stats device;
  pool_stats cpu;
  speculation_stats speculation;
};

}  // namespace actorllm
