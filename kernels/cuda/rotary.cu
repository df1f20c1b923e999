#include "kernels/cuda/check.cuh"
#include "kernels/cuda/rotary.cuh"

namespace actorllm::cuda {

namespace {

template <typename T>
__device__ __forceinline__ void rotate_pair(T* v, int64_t i, int64_t half, bool neox, float cos,
                                            float sin) {
  const int64_t ia = neox ? i : 2 * i;
  const int64_t ib = neox ? i + half : 2 * i + 1;
  const float a = to_float(v[ia]), b = to_float(v[ib]);
  v[ia] = from_float<T>(a * cos - b * sin);
  v[ib] = from_float<T>(b * cos + a * sin);
}

/// One block per token; its threads walk the (head, pair) items of q, then of k.
template <typename T>
__global__ void rotary_kernel(const int32_t* __restrict__ positions,  // (n)
                              T* __restrict__ q,                      // (n, num_heads, head_dim)
                              T* __restrict__ k,  // (n, num_kv_heads, head_dim) or null
                              int64_t num_heads, int64_t num_kv_heads, int64_t head_dim,
                              const float* __restrict__ cos_sin,  // (max_position, rot_dim)
                              int64_t rot_dim, bool neox) {
  const int64_t token = blockIdx.x;
  const int64_t half = rot_dim / 2;
  const float* cos = cos_sin + static_cast<int64_t>(positions[token]) * rot_dim;
  const float* sin = cos + half;
  const int64_t q_items = num_heads * half;
  const int64_t k_items = k ? num_kv_heads * half : 0;
  for (int64_t item = threadIdx.x; item < q_items + k_items; item += blockDim.x) {
    const bool is_q = item < q_items;
    const int64_t local = is_q ? item : item - q_items;
    const int64_t head = local / half, i = local % half;
    T* v = is_q ? q + (token * num_heads + head) * head_dim
                : k + (token * num_kv_heads + head) * head_dim;
    rotate_pair(v, i, half, neox, cos[i], sin[i]);
  }
}

}  // namespace

void rotary_embedding(const int32_t* positions, void* q, void* k, int64_t n, int64_t num_heads,
                      int64_t num_kv_heads, int64_t head_dim, const float* cos_sin, int64_t rot_dim,
                      bool neox, dtype t, cudaStream_t stream) {
  if (n == 0 || rot_dim < 2) return;
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          rotary_kernel<T><<<n, 128, 0, stream>>>(
                              positions, static_cast<T*>(q), static_cast<T*>(k), num_heads,
                              num_kv_heads, head_dim, cos_sin, rot_dim, neox));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
