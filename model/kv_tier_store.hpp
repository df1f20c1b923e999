#pragma once
/// The bytes of the second KV tier on one worker: `num_slots` blocks, each one block of every
/// layer's K and V laid end to end (kv_cache::export_block's layout), in anonymous memory or in
/// a file under a folder (--kv-offload-dir), where the kernel may write cold pages back to disk.
///
/// Each stored block's contents are hashed when stored and checked when loaded: a slot whose
/// bytes changed meanwhile (a bad disk, a stray write, a respawned worker's empty store) is
/// refused, and the caller computes the block again. The scheduler's kv_tier says which block
/// sits in which slot; this class never decides.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/byte_hash.hpp"

namespace actorllm {

class kv_tier_store {
 public:
  /// `folder` empty: anonymous memory; else a new file there, removed when the store goes.
  /// Throws std::runtime_error naming the file when it cannot be made.
  kv_tier_store(int32_t num_slots, int64_t slot_bytes, const std::string& folder);
  ~kv_tier_store();
  kv_tier_store(const kv_tier_store&) = delete;
  kv_tier_store& operator=(const kv_tier_store&) = delete;

  int32_t num_slots() const { return num_slots_; }
  int64_t slot_bytes() const { return slot_bytes_; }
  /// The file backing the store; empty for anonymous memory.
  const std::string& path() const { return path_; }

  /// Where a block is written before seal(slot).
  std::span<std::byte> slot(int32_t slot);
  std::span<const std::byte> slot(int32_t slot) const;
  /// Records the hash of the slot's contents: what load checks.
  void seal(int32_t slot);
  /// Whether the slot holds what was sealed into it.
  bool intact(int32_t slot) const;

 private:
  void check_slot(int32_t slot) const;

  int32_t num_slots_;
  int64_t slot_bytes_;
  std::string path_;
  std::byte* bytes_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  std::vector<uint64_t> sealed_hash_;
  std::vector<uint8_t> sealed_;
};

}  // namespace actorllm
