#pragma once
/// The router's view of its engine replicas (a core): which are usable, and how many tokens
/// each still owes (prompt + max_tokens of its unfinished requests). New requests go to the
/// usable replica that owes the fewest tokens, so a replica added at run time takes new
/// requests at once.
#include <cstdint>
#include <optional>
#include <vector>

namespace actorllm {

class replica_set {
 public:
  /// Returns the new replica's index.
  int32_t add();
  /// A draining replica finishes what it has but gets no new requests.
  bool drain(int32_t index);
  void mark_dead(int32_t index);
  /// A dead replica's slot serves again (a new worker took the lost one's place), with
  /// nothing outstanding.
  void revive(int32_t index);

  /// The usable replica owing the fewest tokens (ties: the lowest index); none if no replica is
  /// usable.
  std::optional<int32_t> pick() const;
  void charge(int32_t index, int64_t num_tokens);
  void release(int32_t index, int64_t num_tokens);

  int32_t num_usable() const;
  int32_t size() const { return static_cast<int32_t>(replicas_.size()); }
  int64_t outstanding(int32_t index) const { return replicas_.at(index).outstanding_tokens; }

 private:
  struct replica {
    int64_t outstanding_tokens = 0;
    bool draining = false;
    bool dead = false;
  };
  std::vector<replica> replicas_;
};

}  // namespace actorllm
