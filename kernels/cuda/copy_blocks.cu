#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/copy_blocks.cuh"

namespace actorllm::cuda {

namespace {

/// grid (num_layers, num_pairs, 2): z picks K (0) or V (1). Copies in units of U.
template <typename U>
__global__ void copy_blocks_kernel(const uint64_t* __restrict__ caches,  // (2, num_layers)
                                   const int32_t* __restrict__ pairs,    // (num_pairs, 2)
                                   int64_t block_units) {
  const int64_t layer = blockIdx.x, pair = blockIdx.y;
  U* cache = reinterpret_cast<U*>(caches[blockIdx.z * gridDim.x + layer]);
  const int64_t src = static_cast<int64_t>(pairs[2 * pair]) * block_units;
  const int64_t dst = static_cast<int64_t>(pairs[2 * pair + 1]) * block_units;
  for (int64_t i = threadIdx.x; i < block_units; i += blockDim.x) cache[dst + i] = cache[src + i];
}

}  // namespace

void copy_blocks(const std::vector<void*>& k_caches, const std::vector<void*>& v_caches,
                 const std::vector<std::pair<int32_t, int32_t>>& pairs, int64_t block_bytes,
                 cudaStream_t stream) {
  if (k_caches.size() != v_caches.size())
    throw std::invalid_argument("copy_blocks: as many V caches as K caches expected");
  const size_t num_layers = k_caches.size(), num_pairs = pairs.size();
  if (num_layers == 0 || num_pairs == 0) return;
  if (num_layers > 65535 || num_pairs > 65535)
    throw std::invalid_argument("copy_blocks: more than 65535 layers or pairs");

  // One host table: the 2 * num_layers cache pointers, then the pairs as int32.
  const size_t ptr_bytes = 2 * num_layers * sizeof(uint64_t);
  std::vector<uint8_t> table(ptr_bytes + 2 * num_pairs * sizeof(int32_t));
  auto* ptrs = reinterpret_cast<uint64_t*>(table.data());
  auto* ids = reinterpret_cast<int32_t*>(table.data() + ptr_bytes);
  for (size_t l = 0; l < num_layers; ++l) {
    ptrs[l] = reinterpret_cast<uint64_t>(k_caches[l]);
    ptrs[num_layers + l] = reinterpret_cast<uint64_t>(v_caches[l]);
  }
  for (size_t p = 0; p < num_pairs; ++p) {
    ids[2 * p] = pairs[p].first;
    ids[2 * p + 1] = pairs[p].second;
  }
  void* scratch = nullptr;
  CUDA_CHECK(cudaMallocAsync(&scratch, table.size(), stream));
  // From pageable memory the copy has consumed `table` when it returns.
  CUDA_CHECK(cudaMemcpyAsync(scratch, table.data(), table.size(), cudaMemcpyHostToDevice, stream));

  const auto* dev_ptrs = static_cast<const uint64_t*>(scratch);
  const auto* dev_pairs =
      reinterpret_cast<const int32_t*>(static_cast<uint8_t*>(scratch) + ptr_bytes);
  const dim3 grid(num_layers, num_pairs, 2);
  if (block_bytes % 16 == 0)
    copy_blocks_kernel<uint4><<<grid, 256, 0, stream>>>(dev_ptrs, dev_pairs, block_bytes / 16);
  else if (block_bytes % 4 == 0)
    copy_blocks_kernel<uint32_t><<<grid, 256, 0, stream>>>(dev_ptrs, dev_pairs, block_bytes / 4);
  else
    copy_blocks_kernel<uint8_t><<<grid, 256, 0, stream>>>(dev_ptrs, dev_pairs, block_bytes);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

}  // namespace actorllm::cuda
