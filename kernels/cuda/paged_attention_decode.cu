// Decode attention over the paged KV cache (one new token per sequence).
//
// One thread block of 128 threads per (sequence, kv head, head chunk, partition). The block's
// threads form groups of L lanes (L = next power of two of head_dim / 8, at most 32); each lane
// holds 8 consecutive dims, so a group reads one key row with 16-byte loads, and the groups of
// a block walk consecutive tokens. Every group keeps an online softmax (max, sum, weighted V)
// for each of the HPB query heads of its chunk; the groups are merged in shared memory at the
// end. v1: one partition covers the whole context and the block writes `out`. v2: partitions
// of decode_partition_size tokens write partial results that decode_reduce_kernel merges.
#include <algorithm>
#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/paged_attention_decode.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kMaxGroups = kThreads;  // L = 1
constexpr int kMaxGroupDims = 1024;   // num_groups * head_dim <= 128 * 8
constexpr int kUnroll = 2;            // tokens per group in flight

struct decode_args {
  const int32_t* seq_lens;      // (num_seqs)
  const int32_t* block_tables;  // (num_seqs, max_blocks_per_seq)
  int64_t max_blocks_per_seq;
  int num_heads, num_kv_heads, head_dim, block_size, head_chunks, lanes_per_group;
  float scale;
  int64_t partition_size;  // tokens per partition (v1: at least the longest context)
  int num_partitions;
  int64_t sliding_window;  // > 0: keys seq_len - sliding_window .. seq_len - 1 only
  float softcap;           // > 0: scores soft-capped
};

/// The first key a decode query at position seq_len - 1 sees.
__device__ __forceinline__ int64_t first_visible_key(int64_t seq_len, int64_t sliding_window) {
  return sliding_window > 0 ? max(int64_t{0}, seq_len - sliding_window) : 0;
}

/// T: the activations' type; C: the cache's elements (T, or float8 widened on load).
template <typename T, typename C, int HPB>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const T* __restrict__ q,        // (num_seqs, num_heads, head_dim)
                  const C* __restrict__ k_cache,  // (num_blocks, kv_heads, block_size, head_dim)
                  const C* __restrict__ v_cache,  // (num_blocks, kv_heads, block_size, head_dim)
                  decode_args a,
                  T* __restrict__ out,             // v1: (num_seqs, num_heads, head_dim)
                  float* __restrict__ tmp_out,     // v2: (num_seqs, num_heads, parts, head_dim)
                  float* __restrict__ max_logits,  // v2: (num_seqs, num_heads, parts)
                  float* __restrict__ exp_sums) {  // v2: (num_seqs, num_heads, parts)
  __shared__ float s_acc[HPB * kMaxGroupDims];
  __shared__ float s_m[HPB * kMaxGroups];  // per group max, then its merge weight
  __shared__ float s_l[HPB * kMaxGroups];
  __shared__ float s_total[HPB];

  const int64_t seq = blockIdx.x;
  const int kv_head = blockIdx.y / a.head_chunks;
  const int chunk = blockIdx.y % a.head_chunks;
  const int part = blockIdx.z;
  const int group_size = a.num_heads / a.num_kv_heads;
  const int D = a.head_dim;
  const int L = a.lanes_per_group;
  const int num_groups = kThreads / L;
  const int group = threadIdx.x / L;
  const int lane = threadIdx.x % L;
  const int dim0 = lane * 8;
  const bool dim_active = dim0 < D;

  const int64_t seq_len = a.seq_lens[seq];
  const int64_t part_start = static_cast<int64_t>(part) * a.partition_size;
  const int64_t start = max(part_start, first_visible_key(seq_len, a.sliding_window));
  const int64_t end = min(part_start + a.partition_size, seq_len);
  const bool v2 = tmp_out != nullptr;

  // Query heads of this block: kv_head * group_size + chunk * HPB + i, for i < HPB in range.
  const int head0 = kv_head * group_size + chunk * HPB;
  const int num_local = min(HPB, group_size - chunk * HPB);

  if (start >= end) {
    // An empty partition (past the context, or wholly before the window): v2 never reads it;
    // v1 (empty context) writes zeros.
    if (!v2)
      for (int idx = threadIdx.x; idx < num_local * D; idx += kThreads)
        out[(seq * a.num_heads + head0 + idx / D) * D + idx % D] = from_float<T>(0.0f);
    return;
  }

  float qv[HPB][8];
#pragma unroll
  for (int i = 0; i < HPB; ++i) {
    if (i < num_local && dim_active) {
      load8(q + (seq * a.num_heads + head0 + i) * D + dim0, qv[i]);
#pragma unroll
      for (int e = 0; e < 8; ++e) qv[i][e] *= a.scale;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) qv[i][e] = 0.0f;
    }
  }

  float m[HPB], l[HPB], acc[HPB][8];
#pragma unroll
  for (int i = 0; i < HPB; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[i][e] = 0.0f;
  }

  const int32_t* table = a.block_tables + seq * a.max_blocks_per_seq;
  const int64_t head_stride = static_cast<int64_t>(a.block_size) * D;  // one kv head of a block
  // The loop bound is the same for the whole block, so every lane reaches every shuffle.
  for (int64_t base = start; base < end; base += kUnroll * num_groups) {
    float kv[kUnroll][8], vv[kUnroll][8];
    bool valid[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t token = base + u * num_groups + group;
      valid[u] = token < end;
      if (valid[u] && dim_active) {
        const int64_t block = table[token / a.block_size];
        const int64_t offset =
            (block * a.num_kv_heads + kv_head) * head_stride + (token % a.block_size) * D + dim0;
        load8(k_cache + offset, kv[u]);
        load8(v_cache + offset, vv[u]);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) kv[u][e] = vv[u][e] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float s[HPB];
#pragma unroll
      for (int i = 0; i < HPB; ++i) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot += qv[i][e] * kv[u][e];
        s[i] = dot;
      }
      // Sum over the L lanes of the group (xor offsets below L stay inside the group).
      for (int o = L / 2; o > 0; o >>= 1) {
#pragma unroll
        for (int i = 0; i < HPB; ++i) s[i] += __shfl_xor_sync(0xffffffffu, s[i], o);
      }
      if (a.softcap > 0.0f) {
#pragma unroll
        for (int i = 0; i < HPB; ++i) s[i] = a.softcap * tanhf(s[i] / a.softcap);
      }
      if (valid[u]) {
#pragma unroll
        for (int i = 0; i < HPB; ++i) {
          const float m_new = fmaxf(m[i], s[i]);
          const float alpha = expf(m[i] - m_new);  // 0 while m[i] is -inf
          const float p = expf(s[i] - m_new);
          l[i] = l[i] * alpha + p;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[i][e] = acc[i][e] * alpha + p * vv[u][e];
          m[i] = m_new;
        }
      }
    }
  }

  // Merge the groups: group g's state goes to row g of the shared tables.
#pragma unroll
  for (int i = 0; i < HPB; ++i) {
    if (lane == 0) {
      s_m[i * kMaxGroups + group] = m[i];
      s_l[i * kMaxGroups + group] = l[i];
    }
    if (dim_active) {
#pragma unroll
      for (int e = 0; e < 8; ++e) s_acc[i * kMaxGroupDims + group * D + dim0 + e] = acc[i][e];
    }
  }
  __syncthreads();
  if (threadIdx.x < num_local) {
    const int i = threadIdx.x;
    float m_max = -INFINITY;
    for (int g = 0; g < num_groups; ++g) m_max = fmaxf(m_max, s_m[i * kMaxGroups + g]);
    // m_max is finite: the partition holds at least one token.
    float total = 0.0f;
    for (int g = 0; g < num_groups; ++g) {
      const float w = expf(s_m[i * kMaxGroups + g] - m_max);  // 0 for a group with no token
      s_m[i * kMaxGroups + g] = w;
      total += w * s_l[i * kMaxGroups + g];
    }
    s_total[i] = total;
    if (v2) {
      const int64_t row = (seq * a.num_heads + head0 + i) * a.num_partitions + part;
      max_logits[row] = m_max;
      exp_sums[row] = total;
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < num_local * D; idx += kThreads) {
    const int i = idx / D, d = idx % D;
    float sum = 0.0f;
    for (int g = 0; g < num_groups; ++g)
      sum += s_m[i * kMaxGroups + g] * s_acc[i * kMaxGroupDims + g * D + d];
    const float value = sum / s_total[i];
    const int64_t head = head0 + i;
    if (v2)
      tmp_out[((seq * a.num_heads + head) * a.num_partitions + part) * D + d] = value;
    else
      out[(seq * a.num_heads + head) * D + d] = from_float<T>(value);
  }
}

/// v2 reduction: one block per (sequence, head) merges the partitions of its context.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    decode_reduce_kernel(const float* __restrict__ tmp_out,     // (seqs, heads, parts, D)
                         const float* __restrict__ max_logits,  // (seqs, heads, parts)
                         const float* __restrict__ exp_sums,    // (seqs, heads, parts)
                         const int32_t* __restrict__ seq_lens,  // (seqs)
                         int num_heads, int head_dim, int64_t partition_size, int num_partitions,
                         int64_t sliding_window,
                         T* __restrict__ out) {  // (seqs, heads, D)
  extern __shared__ float s_weight[];            // (num_partitions)
  __shared__ float scratch[32];
  const int64_t seq = blockIdx.x, head = blockIdx.y;
  const int64_t row = seq * num_heads + head;
  // Clamped so that a max_seq_len below a real length cannot send the reads out of bounds.
  const int parts =
      min(num_partitions, static_cast<int>((seq_lens[seq] + partition_size - 1) / partition_size));
  // Partitions wholly before the window wrote nothing: the merge starts after them.
  const int first = min(
      parts, static_cast<int>(first_visible_key(seq_lens[seq], sliding_window) / partition_size));
  if (parts == 0) {
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x)
      out[row * head_dim + d] = from_float<T>(0.0f);
    return;
  }
  const float* m = max_logits + row * num_partitions;
  const float* l = exp_sums + row * num_partitions;
  float m_max = -INFINITY;
  for (int p = first + threadIdx.x; p < parts; p += blockDim.x) m_max = fmaxf(m_max, m[p]);
  m_max = block_max(m_max, scratch);
  float total = 0.0f;
  for (int p = first + threadIdx.x; p < parts; p += blockDim.x) {
    const float w = expf(m[p] - m_max) * l[p];
    s_weight[p] = w;
    total += w;
  }
  total = block_sum(total, scratch);  // its barriers also publish s_weight
  const float* partial = tmp_out + row * num_partitions * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float sum = 0.0f;
    for (int p = first; p < parts; ++p) sum += s_weight[p] * partial[p * head_dim + d];
    out[row * head_dim + d] = from_float<T>(sum / total);
  }
}

/// Query heads a block takes (a group of more runs in chunks of 4, whose blocks read the same
/// K/V rows, mostly from L2): 8 heads a block held 242-253 registers a thread (ptxas, sm_90),
/// which left room for 2 blocks an SM, where 4 heads use 127 and allow 4.
int heads_per_block(int group_size) {
  return group_size <= 1 ? 1 : group_size <= 2 ? 2 : 4;
}

int64_t num_partitions_for(int64_t max_seq_len) {
  return std::max<int64_t>(1, (max_seq_len + decode_partition_size - 1) / decode_partition_size);
}

template <typename T, typename C, int HPB>
void launch_decode(dim3 grid, cudaStream_t stream, const void* q, const void* k_cache,
                   const void* v_cache, const decode_args& a, void* out, float* tmp_out,
                   float* max_logits, float* exp_sums) {
  decode_kernel<T, C, HPB><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(q), static_cast<const C*>(k_cache), static_cast<const C*>(v_cache), a,
      static_cast<T*>(out), tmp_out, max_logits, exp_sums);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

size_t paged_attention_decode_workspace_bytes(int64_t num_seqs, int64_t num_heads, int64_t head_dim,
                                              int64_t max_seq_len) {
  const int64_t rows = num_seqs * num_heads * num_partitions_for(max_seq_len);
  return static_cast<size_t>(rows * (head_dim + 2)) * sizeof(float);
}

void paged_attention_decode(const void* q, const void* k_cache, const void* v_cache,
                            const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                            int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                            cudaStream_t stream, decode_path path, void* workspace,
                            size_t workspace_bytes) {
  if (head_dim % 8 != 0 || head_dim > 256 || head_dim <= 0)
    throw std::invalid_argument("paged_attention_decode: head_dim must be a multiple of 8, <= 256");
  if (num_kv_heads <= 0 || num_heads % num_kv_heads != 0)
    throw std::invalid_argument("paged_attention_decode: num_heads % num_kv_heads != 0");
  if (batch.num_seqs == 0) return;

  const int group_size = static_cast<int>(num_heads / num_kv_heads);
  const int hpb = heads_per_block(group_size);
  decode_args a{};
  a.seq_lens = batch.seq_lens;
  a.block_tables = batch.block_tables;
  a.max_blocks_per_seq = batch.max_blocks_per_seq;
  a.num_heads = static_cast<int>(num_heads);
  a.num_kv_heads = static_cast<int>(num_kv_heads);
  a.head_dim = static_cast<int>(head_dim);
  a.block_size = static_cast<int>(block_size);
  a.head_chunks = (group_size + hpb - 1) / hpb;
  int lanes = 1;
  while (lanes * 8 < head_dim) lanes *= 2;
  a.lanes_per_group = lanes;
  a.scale = scale;
  a.sliding_window = std::max<int64_t>(0, batch.sliding_window);
  a.softcap = std::max(0.0f, batch.softcap);

  const int64_t parts = num_partitions_for(batch.max_seq_len);
  const int64_t blocks_v1 = batch.num_seqs * num_kv_heads * a.head_chunks;
  if (path == decode_path::automatic) {
    const int sms = multiprocessor_count();
    // v1 when one partition covers every context or the batch alone fills the device.
    path = parts == 1 || blocks_v1 >= 4 * sms ? decode_path::v1 : decode_path::v2;
  }
  if (num_kv_heads * a.head_chunks > 65535 || parts > 65535)
    throw std::invalid_argument("paged_attention_decode: grid too large");

  float* tmp_out = nullptr;
  float* max_logits = nullptr;
  float* exp_sums = nullptr;
  void* scratch = nullptr;
  if (path == decode_path::v1) {
    a.partition_size = INT64_MAX / 4;  // one partition, whatever max_seq_len says
    a.num_partitions = 1;
  } else {
    a.partition_size = decode_partition_size;
    a.num_partitions = static_cast<int>(parts);
    const size_t need = paged_attention_decode_workspace_bytes(batch.num_seqs, num_heads, head_dim,
                                                               batch.max_seq_len);
    void* base = workspace;
    if (!workspace || workspace_bytes < need) {
      CUDA_CHECK(cudaMallocAsync(&scratch, need, stream));
      base = scratch;
    }
    const int64_t rows = batch.num_seqs * num_heads * parts;
    tmp_out = static_cast<float*>(base);
    max_logits = tmp_out + rows * head_dim;
    exp_sums = max_logits + rows;
  }

  const dim3 grid(static_cast<unsigned>(batch.num_seqs),
                  static_cast<unsigned>(num_kv_heads * a.head_chunks),
                  static_cast<unsigned>(a.num_partitions));
  ACTORLLM_DISPATCH_CACHE(
      t, batch.cache, T, C,
      switch (hpb) {
        case 1:
          launch_decode<T, C, 1>(grid, stream, q, k_cache, v_cache, a, out, tmp_out, max_logits,
                                 exp_sums);
          break;
        case 2:
          launch_decode<T, C, 2>(grid, stream, q, k_cache, v_cache, a, out, tmp_out, max_logits,
                                 exp_sums);
          break;
        default:
          launch_decode<T, C, 4>(grid, stream, q, k_cache, v_cache, a, out, tmp_out, max_logits,
                                 exp_sums);
          break;
      } if (path == decode_path::v2) {
        const dim3 reduce_grid(static_cast<unsigned>(batch.num_seqs),
                               static_cast<unsigned>(num_heads));
        decode_reduce_kernel<T><<<reduce_grid, kThreads, parts * sizeof(float), stream>>>(
            tmp_out, max_logits, exp_sums, batch.seq_lens, a.num_heads, a.head_dim,
            a.partition_size, a.num_partitions, a.sliding_window, static_cast<T*>(out));
        CUDA_CHECK_LAUNCH();
      })
  if (scratch) CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

}  // namespace actorllm::cuda
