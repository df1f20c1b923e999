#pragma once
/// The router's view of its engine replicas (a core): what state each is in, how many
/// requests it holds, and how many tokens it still owes (prompt + max_tokens of its
/// unfinished requests). New requests go to the serving replica that owes the fewest tokens,
/// so a replica added at run time takes new requests at once.
///
///   starting ──(its workers are up)──> serving ──drain──> draining ──(its last request ends)──>
///   retired ──(actors down)──> dead
///      └──────────── stop / lost ───────────────────────────────────────────────────────┘
#include <cstdint>
#include <optional>
#include <vector>

namespace actorllm {

enum class replica_state : uint8_t { starting, serving, draining, dead };

const char* to_string(replica_state state);

class replica_set {
 public:
  /// A new serving replica; returns its index.
  int32_t add();
  /// A new replica whose actors are still being built: it gets nothing until start_serving.
  int32_t reserve();
  /// A reserved replica serves. False unless it was starting.
  bool start_serving(int32_t index);
  /// A draining replica finishes what it has but gets no new requests. False for an unknown
  /// or dead replica.
  bool drain(int32_t index);
  void mark_dead(int32_t index);
  /// A dead replica's slot serves again (a new worker took the lost one's place), with
  /// nothing outstanding.
  void revive(int32_t index);

  /// The serving replica owing the fewest tokens (ties: the lowest index); none if no replica
  /// serves.
  std::optional<int32_t> pick() const;
  /// A request goes to / leaves `index`, owing `num_tokens`.
  void charge(int32_t index, int64_t num_tokens);
  void release(int32_t index, int64_t num_tokens);

  /// A draining replica whose last request ended, not reported yet: marks it reported
  /// (so each is retired once) and returns true.
  bool take_drained(int32_t index);

  bool contains(int32_t index) const { return index >= 0 && index < size(); }
  replica_state state(int32_t index) const { return replicas_.at(index).state; }
  int32_t num_usable() const;
  int32_t size() const { return static_cast<int32_t>(replicas_.size()); }
  int64_t outstanding(int32_t index) const { return replicas_.at(index).outstanding_tokens; }
  int32_t num_requests(int32_t index) const { return replicas_.at(index).num_requests; }

 private:
  struct replica {
    int64_t outstanding_tokens = 0;
    int32_t num_requests = 0;
    replica_state state = replica_state::serving;
    bool drained_reported = false;
  };
  std::vector<replica> replicas_;
};

}  // namespace actorllm
