#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/qkv_to_cache.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 256;

/// One block per token; warp w takes heads w, w + 4, ... of q, then k, then v. A head's
/// values pass through the warp's shared row, so the rotation can pair element i with
/// i + head_dim / 2 held by another lane.
template <typename T, typename C>
__global__ void __launch_bounds__(kWarps * 32) qkv_to_cache_kernel(qkv_to_cache_args a) {
  __shared__ float rows[kWarps][kMaxHeadDim];
  const int64_t token = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t D = a.head_dim, half = D / 2;
  const int64_t heads = a.num_heads + 2 * a.num_kv_heads;
  const T* row_in = static_cast<const T*>(a.qkv) + token * heads * D;
  const int64_t slot = a.slot_mapping[token];
  const float* cos = a.cos_sin + static_cast<int64_t>(a.positions[token]) * D;
  const float* sin = cos + half;
  float* s = rows[warp];
  for (int64_t h = warp; h < heads; h += kWarps) {
    const bool is_q = h < a.num_heads, is_k = !is_q && h < a.num_heads + a.num_kv_heads;
    const T* in = row_in + h * D;
    for (int64_t j = lane; j < D; j += 32) s[j] = to_float(in[j]);
    if ((is_q || is_k) && a.q_norm) {
      const T* weight = static_cast<const T*>(is_q ? a.q_norm : a.k_norm);
      float sum_sq = 0.0f;
      for (int64_t j = lane; j < D; j += 32) sum_sq += s[j] * s[j];
      for (int o = 16; o > 0; o >>= 1) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, o);
      const float scale = rsqrtf(sum_sq / static_cast<float>(D) + a.eps);
      for (int64_t j = lane; j < D; j += 32)
        s[j] = to_float(from_float<T>(s[j] * scale * to_float(weight[j])));
    }
    __syncwarp();
    if (is_q || is_k) {
      // Lane-owned pairs (i, i + half): each lane reads and writes only its own.
      for (int64_t i = lane; i < half; i += 32) {
        const float x = s[i], y = s[i + half];
        s[i] = to_float(from_float<T>(x * cos[i] - y * sin[i]));
        s[i + half] = to_float(from_float<T>(y * cos[i] + x * sin[i]));
      }
      __syncwarp();
    }
    if (is_q) {
      T* out = static_cast<T*>(a.q_out) + (token * a.num_heads + h) * D;
      for (int64_t j = lane; j < D; j += 32) out[j] = from_float<T>(s[j]);
    } else if (slot >= 0) {
      const int64_t kv_head = is_k ? h - a.num_heads : h - a.num_heads - a.num_kv_heads;
      const int64_t block = slot / a.block_size, offset = slot % a.block_size;
      C* cache = static_cast<C*>(is_k ? a.k_cache : a.v_cache) +
                 ((block * a.num_kv_heads + kv_head) * a.block_size + offset) * D;
      // The value as t first, as reshape_and_cache receives it, then the cache's element.
      for (int64_t j = lane; j < D; j += 32) cache[j] = to_cache<C>(from_float<T>(s[j]));
    }
    __syncwarp();  // the row is read before the next head overwrites it
  }
}

}  // namespace

void qkv_to_cache(const qkv_to_cache_args& a, dtype t, kv_format cache, cudaStream_t stream) {
  if (a.head_dim <= 0 || a.head_dim % 2 != 0 || a.head_dim > kMaxHeadDim)
    throw std::invalid_argument("qkv_to_cache: head_dim must be even and at most 256");
  if ((a.q_norm == nullptr) != (a.k_norm == nullptr))
    throw std::invalid_argument("qkv_to_cache: q_norm and k_norm come together");
  if (a.n == 0) return;
  ACTORLLM_DISPATCH_CACHE(t, cache, T, C,
                          qkv_to_cache_kernel<T, C><<<a.n, kWarps * 32, 0, stream>>>(a));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
