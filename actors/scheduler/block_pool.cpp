#include "actors/scheduler/block_pool.hpp"

#include <algorithm>

namespace actorllm {

namespace {

uint64_t mix64(uint64_t x) {
  // splitmix64's finalizer: every input bit affects every output bit.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

block_hash hash_block(block_hash parent, std::span<const int32_t> token_ids) {
  uint64_t h = mix64(parent ^ (0x9e3779b97f4a7c15ULL * (token_ids.size() + 1)));
  for (int32_t token : token_ids) {
    h = mix64(h ^ static_cast<uint32_t>(token)) + 0x9e3779b97f4a7c15ULL;
  }
  return mix64(h);
}

block_pool::block_pool(int32_t num_blocks)
    : ref_counts_(num_blocks, 0),
      hashes_(num_blocks, 0),
      has_hash_(num_blocks, 0),
      free_(num_blocks),
      cached_free_(num_blocks) {
  ACTORLLM_CHECK(num_blocks >= 0);
  for (block_id b = 0; b < num_blocks; ++b) free_.push_back(b);
}

block_id block_pool::allocate() {
  ACTORLLM_CHECK(num_available() > 0);
  block_id block;
  if (!free_.empty()) {
    block = free_.pop_front();
  } else {
    block = cached_free_.pop_front();
    if (recording_evictions_) evictions_.push_back({block, hashes_[block]});
    drop_hash(block);
  }
  ref_counts_[block] = 1;
  ++num_used_;
  return block;
}

void block_pool::retain(block_id block) {
  if (ref_counts_[block] == 0) {
    // Only a cached block can be shared from zero: a free one has no content to share.
    ACTORLLM_CHECK(cached_free_.contains(block));
    cached_free_.remove(block);
    ++num_used_;
  }
  ++ref_counts_[block];
}

void block_pool::release(block_id block) {
  ACTORLLM_CHECK(ref_counts_[block] > 0);
  if (--ref_counts_[block] > 0) return;
  --num_used_;
  if (has_hash_[block]) {
    cached_free_.push_back(block);
  } else {
    free_.push_back(block);
  }
}

std::optional<block_id> block_pool::find(block_hash hash) const {
  auto it = index_.find(hash);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

bool block_pool::try_set_hash(block_id block, block_hash hash) {
  ACTORLLM_CHECK(ref_counts_[block] > 0);
  if (has_hash_[block]) return false;
  auto [it, inserted] = index_.emplace(hash, block);
  if (!inserted) return false;
  hashes_[block] = hash;
  has_hash_[block] = 1;
  if (recording_) events_.stored.push_back(hash);
  return true;
}

kv_cache_events block_pool::take_events() {
  // Net of the report's period: a hash stored then evicted (or the reverse) is reported as
  // what the index says now, once.
  kv_cache_events events;
  auto keep = [this](std::vector<uint64_t>& from, std::vector<uint64_t>& to, bool held) {
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    for (uint64_t h : from)
      if (index_.count(h) == static_cast<size_t>(held)) to.push_back(h);
  };
  keep(events_.stored, events.stored, true);
  keep(events_.evicted, events.evicted, false);
  events_ = {};
  return events;
}

std::optional<block_hash> block_pool::hash_of(block_id block) const {
  if (!has_hash_[block]) return std::nullopt;
  return hashes_[block];
}

void block_pool::drop_hash(block_id block) {
  ACTORLLM_CHECK(has_hash_[block]);
  index_.erase(hashes_[block]);
  if (recording_) events_.evicted.push_back(hashes_[block]);
  has_hash_[block] = 0;
}

void block_pool::check_invariants() const {
  int32_t num_used = 0;
  int32_t num_hashed = 0;
  for (block_id b = 0; b < num_blocks(); ++b) {
    ACTORLLM_CHECK(ref_counts_[b] >= 0);
    bool used = ref_counts_[b] > 0;
    num_used += used ? 1 : 0;
    // Exactly one state per block.
    ACTORLLM_CHECK(int(used) + int(free_.contains(b)) + int(cached_free_.contains(b)) == 1);
    ACTORLLM_CHECK(!free_.contains(b) || !has_hash_[b]);
    ACTORLLM_CHECK(!cached_free_.contains(b) || has_hash_[b]);
    if (has_hash_[b]) {
      ++num_hashed;
      auto it = index_.find(hashes_[b]);
      ACTORLLM_CHECK(it != index_.end() && it->second == b);
    }
  }
  ACTORLLM_CHECK(num_used == num_used_);
  ACTORLLM_CHECK(num_hashed == static_cast<int32_t>(index_.size()));
  ACTORLLM_CHECK(num_used_ + free_.size() + cached_free_.size() == num_blocks());
}

}  // namespace actorllm
