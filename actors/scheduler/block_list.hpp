#pragma once
/// An intrusive doubly linked list of block ids: O(1) push_back, pop_front and removal from
/// the middle (a prefix-cache hit takes its block out of the LRU order). Each block is in at
/// most one list, so the links are two arrays indexed by block id.
#include <cstdint>
#include <vector>

#include "common/check.hpp"

namespace actorllm {

class block_list {
 public:
  explicit block_list(int32_t num_blocks)
      : prev_(num_blocks, not_linked), next_(num_blocks, not_linked), linked_(num_blocks, 0) {}

  int32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool contains(int32_t block) const { return linked_[block] != 0; }
  int32_t front() const { return head_; }

  void push_back(int32_t block) {
    ACTORLLM_CHECK(!contains(block));
    prev_[block] = tail_;
    next_[block] = not_linked;
    if (tail_ != not_linked)
      next_[tail_] = block;
    else
      head_ = block;
    tail_ = block;
    linked_[block] = 1;
    ++size_;
  }

  int32_t pop_front() {
    ACTORLLM_CHECK(!empty());
    int32_t block = head_;
    remove(block);
    return block;
  }

  void remove(int32_t block) {
    ACTORLLM_CHECK(contains(block));
    int32_t before = prev_[block];
    int32_t after = next_[block];
    if (before != not_linked)
      next_[before] = after;
    else
      head_ = after;
    if (after != not_linked)
      prev_[after] = before;
    else
      tail_ = before;
    prev_[block] = next_[block] = not_linked;
    linked_[block] = 0;
    --size_;
  }

  /// Blocks from front (evicted first) to back; for checks and tests.
  std::vector<int32_t> to_vector() const {
    std::vector<int32_t> blocks;
    for (int32_t b = head_; b != not_linked; b = next_[b]) blocks.push_back(b);
    return blocks;
  }

 private:
  static constexpr int32_t not_linked = -1;
  std::vector<int32_t> prev_;
  std::vector<int32_t> next_;
  std::vector<uint8_t> linked_;
  int32_t head_ = not_linked;
  int32_t tail_ = not_linked;
  int32_t size_ = 0;
};

}  // namespace actorllm
