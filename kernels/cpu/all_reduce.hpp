#pragma once
/// Tensor parallelism on one host: the ranks of a group (one worker thread each) sum their
/// partial activations in place. Every rank sums the slots in rank order, so all ranks get
/// bit-identical results, as a deterministic all-reduce must.
#include <barrier>
#include <cstdint>
#include <vector>

namespace actorllm::cpu {

class host_all_reduce {
 public:
  explicit host_all_reduce(int32_t num_ranks);

  /// Replaces data(n) on every rank by the sum over the ranks. Every rank of the group calls
  /// it, with the same n, the same number of times (blocks until all have arrived).
  void sum(int32_t rank, float* data, int64_t n);

  int32_t num_ranks() const { return num_ranks_; }

 private:
  int32_t num_ranks_;
  std::barrier<> barrier_;
  std::vector<const float*> slots_;
};

}  // namespace actorllm::cpu
