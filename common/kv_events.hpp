#pragma once
/// KV events: which full prefix blocks a replica's device pool gained and lost, by the block
/// hashes prefix caching uses (actors/scheduler/block_pool.hpp: the hash of a block chains its
/// parent's, so a prefix's blocks hash the same on every replica). The scheduler reports them
/// each step; the router indexes them for cache-aware routing.
#include <cstdint>
#include <vector>

namespace actorllm {

struct kv_cache_events {
  std::vector<uint64_t> stored;   ///< hashes now held
  std::vector<uint64_t> evicted;  ///< hashes dropped (their blocks reused)

  bool empty() const { return stored.empty() && evicted.empty(); }
};

}  // namespace actorllm
