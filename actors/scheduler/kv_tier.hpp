#pragma once
/// The index of the second KV tier (KV offload): which full prefix blocks, by their prefix-cache
/// hash, sit in which slot of a host-memory or file-backed store the workers own. Pure
/// bookkeeping, as block_pool is for the device pool: the workers copy the bytes.
///
/// A block the device pool evicts from its prefix cache is stored here (store()), and a later
/// prefix hit that the device pool no longer has loads it back (find()). The tier is bounded:
/// storing into a full tier evicts its least recently used slot. A slot that a plan in the
/// making loads from is pinned until the plan is complete (unpin_all), so that no store of the
/// same plan overwrites it: the workers run a plan's stores before its loads.
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actors/scheduler/block_list.hpp"
#include "common/engine_stats.hpp"

namespace actorllm {

using tier_slot = int32_t;

class kv_tier {
 public:
  explicit kv_tier(int32_t num_slots);

  int32_t num_slots() const { return static_cast<int32_t>(hash_of_slot_.size()); }
  bool enabled() const { return num_slots() > 0; }
  bool contains(uint64_t hash) const { return slot_of_hash_.count(hash) != 0; }

  /// The slot holding `hash`, made most recently used and pinned, or nullopt.
  std::optional<tier_slot> load(uint64_t hash);
  /// A slot to store the block of `hash` in: a free one, else the least recently used unpinned
  /// one (evicted). nullopt: the tier has it already (it is made most recently used), or
  /// every slot is pinned.
  std::optional<tier_slot> store(uint64_t hash);
  /// The slot's contents did not match when loaded: it is dropped.
  void load_failed(tier_slot slot);
  /// Ends a plan: its loads have been handed out.
  void unpin_all();

  /// From now on, remembers every hash the tier drops (for room, or failed) until
  /// take_dropped(): KV events, as block_pool::record_events.
  void record_drops() { recording_drops_ = true; }
  std::vector<uint64_t> take_dropped() { return std::exchange(dropped_, {}); }

  kv_tier_stats stats() const;
  /// Hashes from least to most recently used; for tests.
  std::vector<uint64_t> lru_order() const;
  /// Aborts when the index and the lists disagree.
  void check_invariants() const;

 private:
  void drop(tier_slot slot);

  std::vector<uint64_t> hash_of_slot_;
  std::vector<uint8_t> used_;
  std::vector<uint8_t> pinned_;
  std::vector<tier_slot> pinned_list_;
  std::vector<tier_slot> free_;
  block_list lru_;  // used, unpinned slots, least recently used first
  std::unordered_map<uint64_t, tier_slot> slot_of_hash_;
  kv_tier_stats stats_;
  bool recording_drops_ = false;
  std::vector<uint64_t> dropped_;
};

}  // namespace actorllm
