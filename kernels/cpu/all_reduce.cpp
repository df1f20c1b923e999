#include "kernels/cpu/all_reduce.hpp"

#include <algorithm>

namespace actorllm::cpu {

host_all_reduce::host_all_reduce(int32_t num_ranks)
    : num_ranks_(num_ranks), barrier_(num_ranks), slots_(num_ranks, nullptr) {}

void host_all_reduce::sum(int32_t rank, float* data, int64_t n) {
  if (num_ranks_ == 1) return;
  thread_local std::vector<float> total;
  slots_[rank] = data;
  barrier_.arrive_and_wait();  // every partial is in place
  total.assign(slots_[0], slots_[0] + n);
  for (int32_t r = 1; r < num_ranks_; ++r) {
    const float* part = slots_[r];
    for (int64_t i = 0; i < n; ++i) total[i] += part[i];
  }
  barrier_.arrive_and_wait();  // nobody reads a partial any more
  std::copy(total.begin(), total.end(), data);
}

}  // namespace actorllm::cpu
