#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/nccl_comm.cuh"

#if ACTORLLM_HAS_NCCL
#include <nccl.h>
#endif

namespace actorllm::cuda {

#if ACTORLLM_HAS_NCCL

namespace {

void nccl_check(ncclResult_t result, const char* what) {
  if (result != ncclSuccess)
    throw std::runtime_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(result));
}

ncclDataType_t nccl_type(dtype t) {
  switch (t) {
    case dtype::f16:
      return ncclHalf;
    case dtype::bf16:
      return ncclBfloat16;
    case dtype::f32:
      break;
  }
  return ncclFloat32;
}

}  // namespace

bool nccl_available() {
  return true;
}

nccl_id nccl_comm::new_id() {
  static_assert(sizeof(ncclUniqueId) == sizeof(nccl_id), "NCCL's unique id is 128 bytes");
  ncclUniqueId unique;
  nccl_check(ncclGetUniqueId(&unique), "ncclGetUniqueId");
  nccl_id id;
  std::memcpy(id.data(), &unique, id.size());
  return id;
}

nccl_comm::nccl_comm(const nccl_id& id, int num_ranks, int rank)
    : num_ranks_(num_ranks), rank_(rank) {
  if (num_ranks < 1 || rank < 0 || rank >= num_ranks)
    throw std::invalid_argument("nccl_comm: rank " + std::to_string(rank) + " of " +
                                std::to_string(num_ranks));
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), id.size());
  ncclComm_t comm = nullptr;
  nccl_check(ncclCommInitRank(&comm, num_ranks, unique, rank), "ncclCommInitRank");
  comm_ = comm;
}

nccl_comm::~nccl_comm() {
  std::lock_guard lock(mutex_);
  if (comm_) ncclCommDestroy(static_cast<ncclComm_t>(comm_));
}

void nccl_comm::all_reduce_sum(void* data, int64_t n, dtype t, cudaStream_t stream) {
  if (n <= 0 || num_ranks_ == 1) return;
  std::lock_guard lock(mutex_);  // held while queuing only: the collective runs on the device
  if (!comm_) throw std::runtime_error("NCCL group aborted: a rank of it is gone");
  nccl_check(ncclAllReduce(data, data, static_cast<size_t>(n), nccl_type(t), ncclSum,
                           static_cast<ncclComm_t>(comm_), stream),
             "ncclAllReduce");
}

void nccl_comm::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  if (!comm_) return;
  ncclCommAbort(static_cast<ncclComm_t>(comm_));
  comm_ = nullptr;
}

#else  // built without NCCL

namespace {

[[noreturn]] void no_nccl() {
  throw std::runtime_error(
      "this build has no NCCL (tensor parallelism on CUDA needs libnccl; install "
      "libnccl-dev and rebuild)");
}

}  // namespace

bool nccl_available() {
  return false;
}

nccl_id nccl_comm::new_id() {
  no_nccl();
}

nccl_comm::nccl_comm(const nccl_id&, int num_ranks, int rank) : num_ranks_(num_ranks), rank_(rank) {
  no_nccl();
}

nccl_comm::~nccl_comm() = default;

void nccl_comm::all_reduce_sum(void*, int64_t, dtype, cudaStream_t) {
  no_nccl();
}

void nccl_comm::abort() {
  aborted_ = true;
}

#endif

}  // namespace actorllm::cuda
