#pragma once
/// The images' embeddings a worker has computed, by image key (common/prompt_image.hpp), so
/// that the chunks of one prompt, its n samples, a recompute after preemption and a repeated
/// image encode once (vLLM's encoder cache). Least recently used first out, within a bound in
/// bytes; an entry the current step uses is never evicted by that step's inserts.
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace actorllm {

class encoder_cache {
 public:
  explicit encoder_cache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  /// The embedding rows of `key`, or null; marks it used by the step `step`.
  const std::vector<float>* find(uint64_t key, uint64_t step);
  /// Keeps `rows` for `key` (used by `step`), evicting the least recently used entries of
  /// earlier steps while the bound is passed. Returns the kept rows.
  const std::vector<float>& insert(uint64_t key, std::vector<float> rows, uint64_t step);

  int64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }

 private:
  struct entry {
    uint64_t key = 0;
    uint64_t last_step = 0;
    std::vector<float> rows;
  };
  int64_t max_bytes_;
  int64_t bytes_ = 0;
  std::list<entry> lru_;  ///< most recently used first
  std::unordered_map<uint64_t, std::list<entry>::iterator> entries_;
};

}  // namespace actorllm
