#pragma once
/// Tensor parallelism on one host: the ranks of a group (one worker thread each) sum their
/// partial activations in place. Every rank sums the slots in rank order, so all ranks get
/// bit-identical results, as a deterministic all-reduce must.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace actorllm::cpu {

/// Thrown by sum() in every rank of a group that was aborted: a peer is gone, and no sum
/// can complete any more.
struct all_reduce_aborted : std::runtime_error {
  all_reduce_aborted() : std::runtime_error("all-reduce aborted: a rank of the group is gone") {}
};

class host_all_reduce {
 public:
  explicit host_all_reduce(int32_t num_ranks);

  /// Replaces data(n) on every rank by the sum over the ranks. Every rank of the group calls
  /// it, with the same n, the same number of times (blocks until all have arrived). Throws
  /// all_reduce_aborted once the group is aborted.
  void sum(int32_t rank, float* data, int64_t n);

  /// Replaces bytes(n) on every rank by rank `root`'s: what a group shares once, such as the
  /// id of a device communicator (NCCL's) that the ranks then join. Every rank calls it, as
  /// sum(); the bytes travel as the sum of root's values and everyone else's zeros, exact for
  /// bytes. Throws all_reduce_aborted as sum() does.
  void broadcast(int32_t rank, int32_t root, uint8_t* bytes, int64_t n);

  /// Breaks the group for good: ranks waiting in sum() and every later call throw. For the
  /// supervisor, when it replaces a group one of whose ranks died: the survivors would
  /// otherwise wait for it forever.
  void abort();

  /// Calls `hook` when the group is aborted (at once where it already is), until
  /// remove_abort_hook(id). A rank's device communicator registers its own abort here, so
  /// that a rank waiting on its device for a lost peer returns as well. Hooks run under a lock
  /// that remove_abort_hook takes: once that returns, its hook is not running and never will.
  int64_t add_abort_hook(std::function<void()> hook);
  void remove_abort_hook(int64_t id);

  int32_t num_ranks() const { return num_ranks_; }

 private:
  void arrive_and_wait();

  int32_t num_ranks_;
  std::vector<const float*> slots_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int32_t num_arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::mutex hooks_mutex_;  // taken after mutex_ is released, never inside it
  std::map<int64_t, std::function<void()>> abort_hooks_;
  int64_t next_hook_ = 0;
};

}  // namespace actorllm::cpu
