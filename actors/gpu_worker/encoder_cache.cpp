#include "actors/gpu_worker/encoder_cache.hpp"

namespace actorllm {

const std::vector<float>* encoder_cache::find(uint64_t key, uint64_t step) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  it->second->last_step = step;
  return &it->second->rows;
}

const std::vector<float>& encoder_cache::insert(uint64_t key, std::vector<float> rows,
                                                uint64_t step) {
  if (const std::vector<float>* kept = find(key, step)) return *kept;
  bytes_ += static_cast<int64_t>(rows.size() * sizeof(float));
  lru_.push_front({key, step, std::move(rows)});
  entries_[key] = lru_.begin();
  // Entries this step uses stay: its batch reads them after the inserts.
  while (bytes_ > max_bytes_ && !lru_.empty() && lru_.back().last_step != step) {
    bytes_ -= static_cast<int64_t>(lru_.back().rows.size() * sizeof(float));
    entries_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return lru_.front().rows;
}

}  // namespace actorllm
