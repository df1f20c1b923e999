#pragma once
/// A pool of fixed-size KV blocks named by integer ids: reference counts, the free blocks,
/// and the prefix-cache index (content hash -> block) over the free and used blocks.
///
/// Every block is in exactly one state:
///   used    ref_count > 0 (in some block table);
///   free    ref_count == 0, no hash: allocated first;
///   cached  ref_count == 0 with a hash: its KV is still valid and can be hit; evicted in LRU
///           order (least recently freed first) only when no free block is left.
/// So num_used() + num_free() + num_cached() == num_blocks() at all times.
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actors/scheduler/block_list.hpp"
#include "common/kv_events.hpp"
#include "common/kv_ids.hpp"

namespace actorllm {

using block_hash = uint64_t;

/// Parent hash of a sequence's first block.
inline constexpr block_hash root_block_hash = 0x6a09e667f3bcc909ULL;

/// Parent hash of the first block of a sequence whose KV depends on more than its tokens: a
/// cache salt (the LoRA adapter it runs with), so that equal tokens under another adapter
/// never hit. Salt 0 is the plain root.
inline block_hash root_block_hash_for(uint64_t salt) {
  if (salt == 0) return root_block_hash;
  uint64_t h = root_block_hash ^ (salt * 0x9e3779b97f4a7c15ULL);  // splitmix64's finaliser
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

/// Hash of a full block: its parent block's hash and its token ids, so equal hashes mean equal
/// prefixes (up to 64-bit collisions).
block_hash hash_block(block_hash parent, std::span<const int32_t> token_ids);

class block_pool {
 public:
  explicit block_pool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_used() const { return num_used_; }
  int32_t num_free() const { return free_.size(); }
  int32_t num_cached() const { return cached_free_.size(); }
  /// Blocks allocate() can hand out now: free ones plus evictable cached ones.
  int32_t num_available() const { return free_.size() + cached_free_.size(); }
  int32_t ref_count(block_id block) const { return ref_counts_[block]; }

  /// Takes a free block, or else evicts the least recently used cached one; ref_count 1.
  /// Requires num_available() > 0.
  block_id allocate();
  /// Adds a reference; a cached block taken this way leaves the eviction order (a hit).
  void retain(block_id block);
  /// Drops a reference. At zero the block becomes cached (at the most recently used end) when
  /// it has a hash, free otherwise.
  void release(block_id block);

  /// The block whose content hashes to `hash`, if cached or in use.
  std::optional<block_id> find(block_hash hash) const;
  /// Registers a used block under `hash`; false (and nothing changes) when the block already
  /// has a hash or another block holds this hash (a duplicate stays uncached).
  bool try_set_hash(block_id block, block_hash hash);
  std::optional<block_hash> hash_of(block_id block) const;

  /// Cached blocks, first to be evicted first.
  std::vector<block_id> eviction_order() const { return cached_free_.to_vector(); }
  /// Aborts when the lists, counts and index disagree.
  void check_invariants() const;

  /// From now on, remembers every hash the index gains and loses until take_events() (KV
  /// events: the router's picture of which prefixes this pool holds).
  void record_events() { recording_ = true; }
  /// The hashes the index gained and lost since the last call, net: each hash once, in the
  /// list that says whether the index holds it now.
  kv_cache_events take_events();

  /// A cached block evicted for reuse, with the hash its content had.
  struct eviction {
    block_id block = 0;
    block_hash hash = 0;
  };
  /// From now on, remembers every cached block allocate() evicts until take_evictions() (what
  /// the KV offload tier stores before the block is written again).
  void record_evictions() { recording_evictions_ = true; }
  std::vector<eviction> take_evictions() { return std::exchange(evictions_, {}); }

 private:
  void drop_hash(block_id block);

  std::vector<int32_t> ref_counts_;
  std::vector<block_hash> hashes_;
  std::vector<uint8_t> has_hash_;
  block_list free_;
  block_list cached_free_;
  std::unordered_map<block_hash, block_id> index_;
  int32_t num_used_ = 0;
  bool recording_ = false;
  kv_cache_events events_;
  bool recording_evictions_ = false;
  std::vector<eviction> evictions_;
};

}  // namespace actorllm
