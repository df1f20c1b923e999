#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// Copies block src of `from` to block dst of `to` for every pair (swap out: device to pinned
/// host; swap in: pinned host to device), with cudaMemcpyAsync on `stream`, normally the
/// worker's side stream so that swaps overlap compute. Runs of consecutive pairs go as one copy.
/// from, to: blocks of block_bytes each. Returns at once: wait on the stream, or on an
/// event recorded after the call, before using `to`.
void swap_blocks(const void* from, void* to, const std::vector<std::pair<int32_t, int32_t>>& pairs,
                 int64_t block_bytes, cudaStream_t stream);

}  // namespace actorllm::cuda
