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

/// The second KV tier (KV offload): its slots and what moved through it since start.
struct kv_tier_stats {
  int32_t num_slots = 0;    ///< blocks it holds at most (0: no tier)
  int32_t num_used = 0;     ///< blocks it holds now
  int64_t num_stored = 0;   ///< blocks stored (evicted from the device pool)
  int64_t num_evicted = 0;  ///< stored blocks dropped for room
  int64_t num_loaded = 0;   ///< blocks loaded back for a prefix hit
  int64_t num_failed = 0;   ///< loads whose contents did not match (recomputed instead)
};

struct scheduler_stats {
  int32_t num_waiting = 0;  ///< requests
  int32_t num_running = 0;
  int32_t num_swapped = 0;
  int64_t num_preemptions = 0;       ///< since start
  int32_t num_scheduled_tokens = 0;  ///< by the last schedule()
  int32_t num_scheduled_seqs = 0;    ///< by the last schedule()
  int64_t prefix_cache_queries = 0;  ///< tokens, since start
  int64_t prefix_cache_hits = 0;     ///< tokens, since start: hits in the device pool
  int64_t tier_cache_queries = 0;    ///< tokens, since start: looked up in the second tier
  int64_t tier_cache_hits = 0;       ///< tokens, since start: hits in the second tier
  kv_tier_stats tier;
  pool_stats device;
  pool_stats cpu;
  speculation_stats speculation;
};

}  // namespace actorllm
