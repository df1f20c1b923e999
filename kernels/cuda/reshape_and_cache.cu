#include "kernels/cuda/check.cuh"
#include "kernels/cuda/reshape_and_cache.cuh"

namespace actorllm::cuda {

namespace {

/// One block per token; its threads walk the num_kv_heads * head_dim elements.
/// T: the activations' type; C: the cache's elements (T, or float8 rounded on store).
template <typename T, typename C>
__global__ void reshape_and_cache_kernel(const T* __restrict__ key,    // (n, kv_heads, head_dim)
                                         const T* __restrict__ value,  // (n, kv_heads, head_dim)
                                         C* __restrict__ k_cache,      // (blocks, kv_heads, bs, hd)
                                         C* __restrict__ v_cache,      // (blocks, kv_heads, bs, hd)
                                         const int64_t* __restrict__ slot_mapping,  // (n)
                                         int64_t num_kv_heads, int64_t head_dim,
                                         int64_t block_size) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  const int64_t block = slot / block_size, offset = slot % block_size;
  const int64_t row = num_kv_heads * head_dim;
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    const int64_t head = i / head_dim, d = i % head_dim;
    const int64_t dst = ((block * num_kv_heads + head) * block_size + offset) * head_dim + d;
    k_cache[dst] = to_cache<C>(key[token * row + i]);
    v_cache[dst] = to_cache<C>(value[token * row + i]);
  }
}

}  // namespace

void reshape_and_cache(const void* key, const void* value, void* k_cache, void* v_cache,
                       const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads,
                       int64_t head_dim, int64_t block_size, dtype t, cudaStream_t stream,
                       kv_format format) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_CACHE(
      t, format, T, C,
      reshape_and_cache_kernel<T, C><<<n, 256, 0, stream>>>(
          static_cast<const T*>(key), static_cast<const T*>(value), static_cast<C*>(k_cache),
          static_cast<C*>(v_cache), slot_mapping, num_kv_heads, head_dim, block_size));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
