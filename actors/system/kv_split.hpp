#pragma once
/// How the device KV memory of a server's models is split, the rule its startup log states:
/// the budget is shared by the models that may be loaded at once (--max-loaded-models, else
/// every model listed): each model's pools get an even share of what is left among the slots
/// not yet held (left / free slots), and what its pools really take is then deducted, so that
/// what one model leaves unused goes to those after it. An unloaded model gives its bytes and
/// its slot back. A model whose own flags fix its pools (--num-gpu-blocks-override,
/// --kv-cache-memory-bytes) takes that much, and is refused, with the numbers, when that is
/// more than is left. Pure bookkeeping.
#include <cstdint>
#include <string>

namespace actorllm {

class kv_split {
 public:
  /// `budget_bytes` (>= 0) for at most `slots` (>= 1) models loaded at once.
  kv_split(int64_t budget_bytes, int32_t slots);

  /// The models that may be loaded at once changed (a model was added to the server).
  void set_slots(int32_t slots);
  /// Bytes the next model's pools may take: an even share of what is left.
  int64_t share() const;
  /// The next model's pools take `bytes` and a slot: empty, or why they cannot (nothing is
  /// taken then).
  std::string take(int64_t bytes);
  /// A model that took `bytes` unloaded: its bytes and its slot are free again.
  void give_back(int64_t bytes);

  int64_t budget() const { return budget_; }
  int64_t left() const { return left_; }
  int32_t slots() const { return slots_; }
  int32_t held() const { return held_; }

 private:
  int64_t budget_;
  int64_t left_;
  int32_t slots_;
  int32_t held_ = 0;
};

/// Bytes as the log shows them: "12.5 MiB".
std::string mib(int64_t bytes);

}  // namespace actorllm
