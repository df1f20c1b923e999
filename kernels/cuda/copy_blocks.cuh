#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// For every (src, dst) pair, copies block src to block dst in every layer's K and V cache
/// (copy-on-write), in one kernel launch. k_caches, v_caches: one device pointer per layer, each
/// cache num_blocks blocks of block_bytes (num_kv_heads * block_size * head_dim elements).
/// All pairs run at once: no destination may be a source or destination of another pair.
/// The pointer and pair tables go to stream-ordered device scratch; the call returns at once.
void copy_blocks(const std::vector<void*>& k_caches, const std::vector<void*>& v_caches,
                 const std::vector<std::pair<int32_t, int32_t>>& pairs, int64_t block_bytes,
                 cudaStream_t stream);

}  // namespace actorllm::cuda
