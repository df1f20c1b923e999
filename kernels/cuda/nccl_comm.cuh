#pragma once
/// One rank's NCCL communicator in a tensor-parallel group: the ranks (one worker each, on
/// devices of their own) sum their partial activations on the device, as the host all-reduce
/// does on the CPU. Built with NCCL where the toolkit or the system has it
/// (ACTORLLM_HAS_NCCL); without it, nccl_available() is false and joining a group throws.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// Whether this build has NCCL.
bool nccl_available();

/// A group's id (NCCL's unique id): one rank makes it, every rank joins with it.
using nccl_id = std::array<uint8_t, 128>;

class nccl_comm {
 public:
  /// A new group's id. Throws std::runtime_error without NCCL, cuda_error on a NCCL failure.
  static nccl_id new_id();

  /// Joins group `id` as `rank` of `num_ranks` on the current device; blocks until every
  /// rank has joined (each on a thread of its own).
  nccl_comm(const nccl_id& id, int num_ranks, int rank);
  ~nccl_comm();
  nccl_comm(const nccl_comm&) = delete;
  nccl_comm& operator=(const nccl_comm&) = delete;

  /// data(n) of type t becomes the sum over the ranks, in place, queued on `stream`. Every
  /// rank calls it, in the same order and with the same n (a CUDA graph may capture it).
  /// Throws std::runtime_error once the communicator is aborted.
  void all_reduce_sum(void* data, int64_t n, dtype t, cudaStream_t stream);

  /// Aborts the communicator (ncclCommAbort), from any thread: the rank's collectives still
  /// waiting on the device for a lost peer end, and every later call throws. For the host
  /// group's abort hook, when a rank of the group is gone.
  void abort();
  bool aborted() const { return aborted_.load(); }

  int num_ranks() const { return num_ranks_; }
  int rank() const { return rank_; }

 private:
  std::mutex mutex_;      // orders abort against a collective being queued
  void* comm_ = nullptr;  // ncclComm_t, kept opaque so this header needs no nccl.h
  std::atomic<bool> aborted_{false};
  int num_ranks_;
  int rank_;
};

}  // namespace actorllm::cuda
