// Prefill attention over the paged KV cache, flash style: one thread block per (query tile of
// kTileQ tokens, sequence, head) walks the visible keys in tiles of kTileK, keeping per query
// row a running max, a running sum and the weighted V accumulator (online softmax), so the
// score matrix never leaves shared memory. Four threads share a query row: thread `sub` owns
// keys sub, sub + 4, ... of a key tile and dims sub, sub + 4, ... of the output row.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/paged_attention_prefill.cuh"
#include "kernels/cuda/prefill_args.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kTileQ = 32;
constexpr int kTileK = 32;
constexpr int kThreads = kTileQ * 4;
constexpr int kKeysPerThread = kTileK / 4;

/// Shared memory floats for head_dim D: Q, K and V tiles with rows padded to D + 1 (no bank
/// conflicts between rows), and the probabilities of the tile with rows of kTileK + 1.
__host__ __device__ constexpr int64_t prefill_smem_floats(int64_t D) {
  return (kTileQ + 2 * kTileK) * (D + 1) + kTileQ * (kTileK + 1);
}

/// T: the activations' type; C: the cache's elements (T, or float8 widened on load).
template <typename T, typename C, int DMAX>
__global__ void __launch_bounds__(kThreads)
    prefill_kernel(const T* __restrict__ q,        // (num_tokens, num_heads, head_dim)
                   const C* __restrict__ k_cache,  // (num_blocks, kv_heads, block_size, head_dim)
                   const C* __restrict__ v_cache,  // (num_blocks, kv_heads, block_size, head_dim)
                   prefill_args a,
                   T* __restrict__ out) {  // (num_tokens, num_heads, head_dim)
  extern __shared__ float smem[];
  const int D = a.head_dim;
  const int SD = D + 1;
  float* s_q = smem;               // (kTileQ, SD), pre-scaled
  float* s_k = s_q + kTileQ * SD;  // (kTileK, SD)
  float* s_v = s_k + kTileK * SD;  // (kTileK, SD)
  float* s_p = s_v + kTileK * SD;  // (kTileQ, kTileK + 1)

  const int64_t seq = blockIdx.y;
  const int head = blockIdx.z;
  const int kv_head = head / (a.num_heads / a.num_kv_heads);
  const int64_t q_begin = a.query_start_loc[seq];
  const int64_t q_len = a.query_start_loc[seq + 1] - q_begin;
  const int64_t tile0 = static_cast<int64_t>(blockIdx.x) * kTileQ;
  if (tile0 >= q_len) return;  // the whole block leaves together
  const int64_t seq_len = a.seq_lens[seq];
  const int64_t context = seq_len - q_len;  // tokens before the first new one
  const int rows = static_cast<int>(min(static_cast<int64_t>(kTileQ), q_len - tile0));
  // The last row of the tile sees keys up to kv_end; the first row's window starts at
  // kv_begin, and no key before it is read (its block may be freed).
  const int64_t kv_end = context + tile0 + rows;
  const int64_t kv_begin =
      a.sliding_window > 0 ? max(int64_t{0}, context + tile0 + 1 - a.sliding_window) : 0;

  for (int e = threadIdx.x; e < kTileQ * D; e += kThreads) {
    const int i = e / D, d = e % D;
    s_q[i * SD + d] =
        i < rows ? to_float(q[((q_begin + tile0 + i) * a.num_heads + head) * D + d]) * a.scale
                 : 0.0f;
  }

  const int row = threadIdx.x / 4;
  const int sub = threadIdx.x % 4;
  const bool row_valid = row < rows;
  const int64_t row_limit = context + tile0 + row + 1;  // keys [row_start, row_limit) are visible
  const int64_t row_start = a.sliding_window > 0 ? row_limit - a.sliding_window : 0;
  float m = -INFINITY, l = 0.0f;
  float o[DMAX / 4];
#pragma unroll
  for (int k = 0; k < DMAX / 4; ++k) o[k] = 0.0f;

  const int32_t* table = a.block_tables + seq * a.max_blocks_per_seq;
  const int64_t head_stride = static_cast<int64_t>(a.block_size) * D;
  for (int64_t kv0 = kv_begin; kv0 < kv_end; kv0 += kTileK) {
    __syncthreads();  // the previous tile's K, V and P are consumed (and Q is written)
    for (int e = threadIdx.x; e < kTileK * D; e += kThreads) {
      const int j = e / D, d = e % D;
      const int64_t token = kv0 + j;
      float kx = 0.0f, vx = 0.0f;
      if (token < kv_end) {
        const int64_t block = table[token / a.block_size];
        const int64_t offset =
            (block * a.num_kv_heads + kv_head) * head_stride + (token % a.block_size) * D + d;
        kx = to_float(k_cache[offset]);
        vx = to_float(v_cache[offset]);
      }
      s_k[j * SD + d] = kx;
      s_v[j * SD + d] = vx;
    }
    __syncthreads();

    float s[kKeysPerThread];
#pragma unroll
    for (int c = 0; c < kKeysPerThread; ++c) s[c] = 0.0f;
    const float* qr = s_q + row * SD;
    for (int d = 0; d < D; ++d) {
      const float qd = qr[d];
#pragma unroll
      for (int c = 0; c < kKeysPerThread; ++c) s[c] += qd * s_k[(sub + 4 * c) * SD + d];
    }
    if (a.softcap > 0.0f) {
#pragma unroll
      for (int c = 0; c < kKeysPerThread; ++c) s[c] = a.softcap * tanhf(s[c] / a.softcap);
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < kKeysPerThread; ++c) {
      const int64_t token = kv0 + sub + 4 * c;
      if (!row_valid || token >= row_limit || token < row_start) s[c] = -INFINITY;
      tile_max = fmaxf(tile_max, s[c]);
    }
    // The four threads of a row are adjacent lanes of one warp.
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(m, tile_max);
    // A row that sees no key yet (or an unused row) keeps m = -inf and adds nothing.
    const bool any = m_new != -INFINITY;
    const float alpha = any ? expf(m - m_new) : 1.0f;
    float tile_sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kKeysPerThread; ++c) {
      const float p = any ? expf(s[c] - m_new) : 0.0f;
      s_p[row * (kTileK + 1) + sub + 4 * c] = p;
      tile_sum += p;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 2);
    l = l * alpha + tile_sum;
    m = m_new;
    __syncwarp();  // the row's P is written and read by the same four lanes

    const float* pr = s_p + row * (kTileK + 1);
#pragma unroll
    for (int k = 0; k < DMAX / 4; ++k) o[k] *= alpha;
    for (int j = 0; j < kTileK; ++j) {
      const float p = pr[j];
      const float* vr = s_v + j * SD;
#pragma unroll
      for (int k = 0; k < DMAX / 4; ++k) {
        const int d = sub + 4 * k;
        if (d < D) o[k] += p * vr[d];
      }
    }
  }

  if (!row_valid) return;
  const float inv = 1.0f / l;
  T* dst = out + ((q_begin + tile0 + row) * a.num_heads + head) * D;
#pragma unroll
  for (int k = 0; k < DMAX / 4; ++k) {
    const int d = sub + 4 * k;
    if (d < D) dst[d] = from_float<T>(o[k] * inv);
  }
}

template <typename T, typename C, int DMAX>
void launch_prefill(dim3 grid, cudaStream_t stream, const void* q, const void* k_cache,
                    const void* v_cache, const prefill_args& a, void* out) {
  const size_t smem = prefill_smem_floats(a.head_dim) * sizeof(float);
  auto* kernel = prefill_kernel<T, C, DMAX>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)));
  kernel<<<grid, kThreads, smem, stream>>>(static_cast<const T*>(q), static_cast<const C*>(k_cache),
                                           static_cast<const C*>(v_cache), a, static_cast<T*>(out));
  CUDA_CHECK_LAUNCH();
}

}  // namespace

bool tensor_core_prefill_takes(dtype t, int64_t head_dim) {
  return t != dtype::f32 && (head_dim == 64 || head_dim == 128) && compute_capability() >= 80;
}

bool tensor_core_prefill_chosen(dtype t, int64_t head_dim) {
  static const bool cuda_cores_only = [] {
    const char* forced = std::getenv("ACTORLLM_CUDA_PREFILL");
    return forced != nullptr && std::string(forced) == "cuda_cores";
  }();
  return !cuda_cores_only && tensor_core_prefill_takes(t, head_dim);
}

void paged_attention_prefill(const void* q, const void* k_cache, const void* v_cache,
                             const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                             int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                             cudaStream_t stream, prefill_path kernel) {
  if (head_dim <= 0 || head_dim > 256)
    throw std::invalid_argument("paged_attention_prefill: head_dim must be in 1..256");
  if (num_kv_heads <= 0 || num_heads % num_kv_heads != 0)
    throw std::invalid_argument("paged_attention_prefill: num_heads % num_kv_heads != 0");
  if (batch.num_seqs > 65535 || num_heads > 65535)
    throw std::invalid_argument("paged_attention_prefill: more than 65535 sequences or heads");
  if (batch.num_seqs == 0 || batch.max_query_len == 0) return;
  if (kernel == prefill_path::tensor_cores && !tensor_core_prefill_takes(t, head_dim))
    throw std::invalid_argument(
        "paged_attention_prefill: the tensor-core kernel takes f16/bf16, head_dim 64 or 128, "
        "on sm_80 or newer");
  if (kernel == prefill_path::tensor_cores ||
      (kernel == prefill_path::automatic && tensor_core_prefill_chosen(t, head_dim))) {
    paged_attention_prefill_tensor_cores(q, k_cache, v_cache, batch, num_heads, num_kv_heads,
                                         head_dim, block_size, scale, out, t, stream);
    return;
  }

  const prefill_args a =
      prefill_args_of(batch, num_heads, num_kv_heads, head_dim, block_size, scale);
  const dim3 grid(static_cast<unsigned>((batch.max_query_len + kTileQ - 1) / kTileQ),
                  static_cast<unsigned>(batch.num_seqs), static_cast<unsigned>(num_heads));
  ACTORLLM_DISPATCH_CACHE(
      t, batch.cache, T, C,
      if (head_dim <= 64) launch_prefill<T, C, 64>(grid, stream, q, k_cache, v_cache, a, out);
      else if (head_dim <= 128)
          launch_prefill<T, C, 128>(grid, stream, q, k_cache, v_cache, a, out);
      else launch_prefill<T, C, 256>(grid, stream, q, k_cache, v_cache, a, out);)
}

}  // namespace actorllm::cuda
