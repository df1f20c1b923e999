#include "actors/scheduler/kv_tier.hpp"

#include "common/check.hpp"

namespace actorllm {

kv_tier::kv_tier(int32_t num_slots)
    : hash_of_slot_(num_slots, 0), used_(num_slots, 0), pinned_(num_slots, 0), lru_(num_slots) {
  ACTORLLM_CHECK(num_slots >= 0);
  free_.reserve(num_slots);
  for (tier_slot s = num_slots - 1; s >= 0; --s) free_.push_back(s);  // slot 0 first
}

std::optional<tier_slot> kv_tier::load(uint64_t hash) {
  const auto it = slot_of_hash_.find(hash);
  if (it == slot_of_hash_.end()) return std::nullopt;
  const tier_slot slot = it->second;
  if (!pinned_[slot]) {
    lru_.remove(slot);
    pinned_[slot] = 1;
    pinned_list_.push_back(slot);
  }
  ++stats_.num_loaded;
  return slot;
}

std::optional<tier_slot> kv_tier::store(uint64_t hash) {
  if (const auto it = slot_of_hash_.find(hash); it != slot_of_hash_.end()) {
    if (!pinned_[it->second]) {
      lru_.remove(it->second);
      lru_.push_back(it->second);
    }
    return std::nullopt;
  }
  tier_slot slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    slot = lru_.pop_front();
    slot_of_hash_.erase(hash_of_slot_[slot]);
    if (recording_drops_) dropped_.push_back(hash_of_slot_[slot]);
    ++stats_.num_evicted;
  } else {
    return std::nullopt;  // empty tier, or every slot pinned by this plan
  }
  used_[slot] = 1;
  hash_of_slot_[slot] = hash;
  slot_of_hash_[hash] = slot;
  lru_.push_back(slot);
  ++stats_.num_stored;
  return slot;
}

void kv_tier::load_failed(tier_slot slot) {
  ACTORLLM_CHECK(slot >= 0 && slot < num_slots());
  ++stats_.num_failed;
  // A later plan may have stored another block there meanwhile: only the same content goes.
  if (used_[slot]) drop(slot);
}

void kv_tier::drop(tier_slot slot) {
  if (pinned_[slot]) {
    pinned_[slot] = 0;
    std::erase(pinned_list_, slot);
  } else {
    lru_.remove(slot);
  }
  slot_of_hash_.erase(hash_of_slot_[slot]);
  if (recording_drops_) dropped_.push_back(hash_of_slot_[slot]);
  used_[slot] = 0;
  free_.push_back(slot);
}

void kv_tier::unpin_all() {
  for (tier_slot slot : pinned_list_) {
    pinned_[slot] = 0;
    lru_.push_back(slot);  // most recently used: just loaded
  }
  pinned_list_.clear();
}

kv_tier_stats kv_tier::stats() const {
  kv_tier_stats out = stats_;
  out.num_slots = num_slots();
  out.num_used = static_cast<int32_t>(slot_of_hash_.size());
  return out;
}

std::vector<uint64_t> kv_tier::lru_order() const {
  std::vector<uint64_t> out;
  for (tier_slot slot : lru_.to_vector()) out.push_back(hash_of_slot_[slot]);
  return out;
}

void kv_tier::check_invariants() const {
  int32_t used = 0;
  for (tier_slot s = 0; s < num_slots(); ++s) {
    if (!used_[s]) {
      ACTORLLM_CHECK(!lru_.contains(s) && !pinned_[s]);
      continue;
    }
    ++used;
    ACTORLLM_CHECK(lru_.contains(s) != (pinned_[s] != 0));
    const auto it = slot_of_hash_.find(hash_of_slot_[s]);
    ACTORLLM_CHECK(it != slot_of_hash_.end() && it->second == s);
  }
  ACTORLLM_CHECK(used == static_cast<int32_t>(slot_of_hash_.size()));
  ACTORLLM_CHECK(used + static_cast<int32_t>(free_.size()) == num_slots());
}

}  // namespace actorllm
