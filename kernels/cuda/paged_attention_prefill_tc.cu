// Prefill attention on tensor cores, FlashAttention-2's loop: one thread block of four warps
// per (tile of 64 queries, sequence, head) walks the visible keys in tiles of 64. Each warp
// owns 16 query rows:
//   S = Q K^T        16 x 64 per warp, WMMA 16x16x16 (t in, fp32 out) into shared memory;
//   online softmax   two lanes per row (32 keys each): scale, soft-cap, causal and window
//                    mask, running max m and sum l in fp32; P rounded to t in shared memory;
//                    the row's output accumulator scaled by exp(m_old - m_new);
//   O += P V         16 x head_dim per warp, WMMA with the accumulator in shared memory
//                    (WMMA keeps no row mapping of its fragments, so the rescale is done there).
// Q, K and V tiles sit in shared memory as t (K and V converted from the cache's elements, so
// a float8 cache works the same); rows are padded by 8 elements against bank conflicts. The
// semantics are paged_attention_prefill's (and the CPU op's).
#include <mma.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/paged_attention_prefill.cuh"
#include "kernels/cuda/prefill_args.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 16;
constexpr int kTileQ = kWarps * kRowsPerWarp;  // 64
constexpr int kTileK = 64;

/// Shared memory of the kernel for head_dim D, in bytes, region by region; every region
/// starts 32-byte aligned, as WMMA's loads and stores need.
template <int D>
struct tc_layout {
  static constexpr int ld_t = D + 8;       // Q, K, V rows (elements of t)
  static constexpr int ld_s = kTileK + 4;  // S rows (floats)
  static constexpr int ld_p = kTileK + 8;  // P rows (elements of t)
  static constexpr int ld_o = D + 4;       // O rows (floats)
  static constexpr size_t q = 0;
  static constexpr size_t k = q + size_t(kTileQ) * ld_t * 2;
  static constexpr size_t v = k + size_t(kTileK) * ld_t * 2;
  static constexpr size_t s = v + size_t(kTileK) * ld_t * 2;
  static constexpr size_t p = s + size_t(kTileQ) * ld_s * 4;
  static constexpr size_t o = p + size_t(kTileQ) * ld_p * 2;
  static constexpr size_t bytes = o + size_t(kTileQ) * ld_o * 4;
  static_assert(k % 32 == 0 && v % 32 == 0 && s % 32 == 0 && p % 32 == 0 && o % 32 == 0,
                "WMMA needs 32-byte aligned tiles");
};

/// dst[0..8) = src[0..8) of the cache's element type, as t.
template <typename T, typename C>
__device__ __forceinline__ void copy8(const C* src, T* dst) {
  float v[8];
  load8(src, v);
  store8(dst, v);
}

template <typename T, typename C, int D>
__global__ void __launch_bounds__(kThreads)
    prefill_tc_kernel(const T* __restrict__ q,        // (num_tokens, num_heads, D)
                      const C* __restrict__ k_cache,  // (blocks, kv_heads, block_size, D)
                      const C* __restrict__ v_cache,  // (blocks, kv_heads, block_size, D)
                      prefill_args a,
                      T* __restrict__ out) {  // (num_tokens, num_heads, D)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  namespace wmma = nvcuda::wmma;
  using L = tc_layout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* s_q = reinterpret_cast<T*>(smem + L::q);
  T* s_k = reinterpret_cast<T*>(smem + L::k);
  T* s_v = reinterpret_cast<T*>(smem + L::v);
  float* s_s = reinterpret_cast<float*>(smem + L::s);
  T* s_p = reinterpret_cast<T*>(smem + L::p);
  float* s_o = reinterpret_cast<float*>(smem + L::o);

  const int64_t seq = blockIdx.y;
  const int head = blockIdx.z;
  const int kv_head = head / (a.num_heads / a.num_kv_heads);
  const int64_t q_begin = a.query_start_loc[seq];
  const int64_t q_len = a.query_start_loc[seq + 1] - q_begin;
  const int64_t tile0 = static_cast<int64_t>(blockIdx.x) * kTileQ;
  if (tile0 >= q_len) return;                       // the whole block leaves together
  const int64_t context = a.seq_lens[seq] - q_len;  // tokens before the first new one
  const int rows = static_cast<int>(min(static_cast<int64_t>(kTileQ), q_len - tile0));
  const int64_t kv_end = context + tile0 + rows;
  const int64_t kv_begin =
      a.sliding_window > 0 ? max(int64_t{0}, context + tile0 + 1 - a.sliding_window) : 0;

  // Q tile as t (unscaled: the scale is applied to the fp32 scores); rows past the tile zero.
  for (int e = threadIdx.x; e < kTileQ * D / 8; e += kThreads) {
    const int i = e / (D / 8), d = (e % (D / 8)) * 8;
    T* dst = s_q + i * L::ld_t + d;
    if (i < rows) {
      copy8(q + ((q_begin + tile0 + i) * a.num_heads + head) * D + d, dst);
    } else {
      const float zeros[8] = {};
      store8(dst, zeros);
    }
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 2, half = lane % 2;  // the row and half of the keys (and dims) a lane takes
  const int row = warp * kRowsPerWarp + r;  // in the tile
  const bool row_valid = row < rows;
  const int64_t row_limit = context + tile0 + row + 1;  // keys [row_start, row_limit) visible
  const int64_t row_start = a.sliding_window > 0 ? row_limit - a.sliding_window : 0;
  float* w_s = s_s + warp * kRowsPerWarp * L::ld_s;
  T* w_p = s_p + warp * kRowsPerWarp * L::ld_p;
  float* w_o = s_o + warp * kRowsPerWarp * L::ld_o;
  for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d) w_o[r * L::ld_o + d] = 0.0f;
  float m = -INFINITY, l = 0.0f;

  const int32_t* table = a.block_tables + seq * a.max_blocks_per_seq;
  const int64_t head_stride = static_cast<int64_t>(a.block_size) * D;
  for (int64_t kv0 = kv_begin; kv0 < kv_end; kv0 += kTileK) {
    __syncthreads();  // the previous tile's K and V are consumed (and Q is written)
    for (int e = threadIdx.x; e < kTileK * D / 8; e += kThreads) {
      const int j = e / (D / 8), d = (e % (D / 8)) * 8;
      const int64_t token = kv0 + j;
      T* k_dst = s_k + j * L::ld_t + d;
      T* v_dst = s_v + j * L::ld_t + d;
      if (token < kv_end) {
        const int64_t block = table[token / a.block_size];
        const int64_t offset =
            (block * a.num_kv_heads + kv_head) * head_stride + (token % a.block_size) * D + d;
        copy8(k_cache + offset, k_dst);
        copy8(v_cache + offset, v_dst);
      } else {
        const float zeros[8] = {};
        store8(k_dst, zeros);
        store8(v_dst, zeros);
      }
    }
    __syncthreads();

    // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
#pragma unroll
    for (int n = 0; n < kTileK / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kd = 0; kd < D / 16; ++kd) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;
        wmma::load_matrix_sync(qa, s_q + warp * kRowsPerWarp * L::ld_t + kd * 16, L::ld_t);
        wmma::load_matrix_sync(kb, s_k + n * 16 * L::ld_t + kd * 16, L::ld_t);
        wmma::mma_sync(acc, qa, kb, acc);
      }
      wmma::store_matrix_sync(w_s + n * 16, acc, L::ld_s, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax: this lane's 32 keys of its row.
    float s[kTileK / 2];
    float tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < kTileK / 2; ++c) {
      const int j = half * (kTileK / 2) + c;
      const int64_t token = kv0 + j;
      float x = w_s[r * L::ld_s + j] * a.scale;
      if (a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
      if (!row_valid || token >= row_limit || token < row_start) x = -INFINITY;
      s[c] = x;
      tile_max = fmaxf(tile_max, x);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    // A row that sees no key yet (or an unused row) keeps m = -inf and adds nothing.
    const bool any = m_new != -INFINITY;
    const float alpha = any ? expf(m - m_new) : 1.0f;
    float tile_sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kTileK / 2; ++c) {
      const float p = any ? expf(s[c] - m_new) : 0.0f;
      w_p[r * L::ld_p + half * (kTileK / 2) + c] = from_float<T>(p);
      tile_sum += p;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    l = l * alpha + tile_sum;
    m = m_new;
    for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d) w_o[r * L::ld_o + d] *= alpha;
    __syncwarp();

    // O += P V for the warp's 16 rows, 16 output dims at a time.
#pragma unroll
    for (int dn = 0; dn < D / 16; ++dn) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, w_o + dn * 16, L::ld_o, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
        wmma::load_matrix_sync(pa, w_p + kk * 16, L::ld_p);
        wmma::load_matrix_sync(vb, s_v + kk * 16 * L::ld_t + dn * 16, L::ld_t);
        wmma::mma_sync(acc, pa, vb, acc);
      }
      wmma::store_matrix_sync(w_o + dn * 16, acc, L::ld_o, wmma::mem_row_major);
    }
    __syncwarp();
  }

  if (!row_valid) return;
  const float inv = 1.0f / l;
  T* dst = out + ((q_begin + tile0 + row) * a.num_heads + head) * D;
  for (int d = half * (D / 2); d < (half + 1) * (D / 2); ++d)
    dst[d] = from_float<T>(w_o[r * L::ld_o + d] * inv);
#endif
}

template <typename T, typename C, int D>
void launch_tc(dim3 grid, cudaStream_t stream, const void* q, const void* k_cache,
               const void* v_cache, const prefill_args& a, void* out) {
  constexpr size_t smem = tc_layout<D>::bytes;
  auto* kernel = prefill_tc_kernel<T, C, D>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)));
  kernel<<<grid, kThreads, smem, stream>>>(static_cast<const T*>(q), static_cast<const C*>(k_cache),
                                           static_cast<const C*>(v_cache), a, static_cast<T*>(out));
  CUDA_CHECK_LAUNCH();
}

template <typename T, typename C>
void launch_tc_for(int64_t head_dim, dim3 grid, cudaStream_t stream, const void* q,
                   const void* k_cache, const void* v_cache, const prefill_args& a, void* out) {
  if (head_dim == 64)
    launch_tc<T, C, 64>(grid, stream, q, k_cache, v_cache, a, out);
  else
    launch_tc<T, C, 128>(grid, stream, q, k_cache, v_cache, a, out);
}

}  // namespace

void paged_attention_prefill_tensor_cores(const void* q, const void* k_cache, const void* v_cache,
                                          const paged_batch& batch, int64_t num_heads,
                                          int64_t num_kv_heads, int64_t head_dim,
                                          int64_t block_size, float scale, void* out, dtype t,
                                          cudaStream_t stream) {
  if (head_dim != 64 && head_dim != 128)
    throw std::invalid_argument("paged_attention_prefill_tensor_cores: head_dim 64 or 128");
  const prefill_args a =
      prefill_args_of(batch, num_heads, num_kv_heads, head_dim, block_size, scale);
  const dim3 grid(static_cast<unsigned>((batch.max_query_len + kTileQ - 1) / kTileQ),
                  static_cast<unsigned>(batch.num_seqs), static_cast<unsigned>(num_heads));
  const bool fp8 = batch.cache == kv_format::fp8_e4m3;
  switch (t) {
    case dtype::f16:
      if (fp8)
        launch_tc_for<__half, __nv_fp8_e4m3>(head_dim, grid, stream, q, k_cache, v_cache, a, out);
      else
        launch_tc_for<__half, __half>(head_dim, grid, stream, q, k_cache, v_cache, a, out);
      break;
    case dtype::bf16:
      if (fp8)
        launch_tc_for<__nv_bfloat16, __nv_fp8_e4m3>(head_dim, grid, stream, q, k_cache, v_cache, a,
                                                    out);
      else
        launch_tc_for<__nv_bfloat16, __nv_bfloat16>(head_dim, grid, stream, q, k_cache, v_cache, a,
                                                    out);
      break;
    case dtype::f32:
      throw std::invalid_argument("paged_attention_prefill_tensor_cores: f16 or bf16 only");
  }
}

}  // namespace actorllm::cuda
