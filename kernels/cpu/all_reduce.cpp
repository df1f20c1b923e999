#include "kernels/cpu/all_reduce.hpp"

#include <algorithm>

namespace actorllm::cpu {

host_all_reduce::host_all_reduce(int32_t num_ranks)
    : num_ranks_(num_ranks), slots_(num_ranks, nullptr) {}

void host_all_reduce::arrive_and_wait() {
  std::unique_lock lock(mutex_);
  if (aborted_) throw all_reduce_aborted();
  const uint64_t generation = generation_;
  if (++num_arrived_ == num_ranks_) {
    num_arrived_ = 0;
    ++generation_;
    all_arrived_.notify_all();
    return;
  }
  all_arrived_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (generation_ == generation) throw all_reduce_aborted();
}

void host_all_reduce::abort() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    all_arrived_.notify_all();
  }
  std::lock_guard hooks(hooks_mutex_);
  for (auto& [id, hook] : abort_hooks_) hook();
  abort_hooks_.clear();  // each runs once
}

int64_t host_all_reduce::add_abort_hook(std::function<void()> hook) {
  std::lock_guard hooks(hooks_mutex_);
  bool aborted;
  {
    std::lock_guard lock(mutex_);
    aborted = aborted_;
  }
  const int64_t id = next_hook_++;
  if (aborted)
    hook();
  else
    abort_hooks_.emplace(id, std::move(hook));
  return id;
}

void host_all_reduce::remove_abort_hook(int64_t id) {
  std::lock_guard hooks(hooks_mutex_);
  abort_hooks_.erase(id);
}

void host_all_reduce::sum(int32_t rank, float* data, int64_t n) {
  if (num_ranks_ == 1) return;
  thread_local std::vector<float> total;
  slots_[rank] = data;
  arrive_and_wait();  // every partial is in place
  total.assign(slots_[0], slots_[0] + n);
  for (int32_t r = 1; r < num_ranks_; ++r) {
    const float* part = slots_[r];
    for (int64_t i = 0; i < n; ++i) total[i] += part[i];
  }
  arrive_and_wait();  // nobody reads a partial any more
  std::copy(total.begin(), total.end(), data);
}

void host_all_reduce::broadcast(int32_t rank, int32_t root, uint8_t* bytes, int64_t n) {
  std::vector<float> values(static_cast<size_t>(n), 0.0f);
  if (rank == root)
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(bytes[i]);
  sum(rank, values.data(), n);
  for (int64_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(values[i]);
}

}  // namespace actorllm::cpu
