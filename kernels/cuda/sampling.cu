// Sampling kernels: one block of kThreads per row. Top-k and top-p thresholds are found by a
// bitwise search over the float bits of the (unnormalized) probabilities, which order as
// unsigned integers because they are non-negative: 31 counting passes per threshold, no sort
// and no workspace. sample_rows first edits its row in place (mask, then the sparse edits),
// with a barrier between each phase, then draws as sample_top_k_top_p does.
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/token_bitmask_row.cuh"

namespace actorllm::cuda {

namespace {

constexpr int kThreads = 1024;

/// (value, index) of the row maximum, lowest index on ties; every thread gets it.
template <typename T>
__device__ void row_argmax(const T* row, int64_t vocab, float* s_val, int* s_idx, float& best,
                           int& best_idx) {
  best = -INFINITY;
  best_idx = 0x7fffffff;
  for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
    const float v = to_float(row[j]);
    if (v > best) best = v, best_idx = static_cast<int>(j);  // j rises, so ties keep the first
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const int oi = __shfl_xor_sync(0xffffffffu, best_idx, o);
    if (ov > best || (ov == best && oi < best_idx)) best = ov, best_idx = oi;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) s_val[warp] = best, s_idx[warp] = best_idx;
  __syncthreads();
  const int num_warps = blockDim.x >> 5;
  best = lane < num_warps ? s_val[lane] : -INFINITY;
  best_idx = lane < num_warps ? s_idx[lane] : 0x7fffffff;
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const int oi = __shfl_xor_sync(0xffffffffu, best_idx, o);
    if (ov > best || (ov == best && oi < best_idx)) best = ov, best_idx = oi;
  }
  if (best_idx == 0x7fffffff) best_idx = 0;  // a row of NaNs
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const T* __restrict__ logits,  // (n, vocab)
                  int64_t vocab,
                  int32_t* __restrict__ tokens) {  // (n)
  __shared__ float s_val[32];
  __shared__ int s_idx[32];
  float best;
  int best_idx;
  row_argmax(logits + blockIdx.x * vocab, vocab, s_val, s_idx, best, best_idx);
  if (threadIdx.x == 0) tokens[blockIdx.x] = best_idx;
}

/// Unnormalized probability bits: the float bits of exp((x - max) / temperature) in [0, 1].
template <typename T>
__device__ __forceinline__ uint32_t prob_bits(const T* row, int64_t j, float max_logit,
                                              float inv_temp) {
  return __float_as_uint(expf((to_float(row[j]) - max_logit) * inv_temp));
}

/// Shared memory of one row's draw.
struct draw_scratch {
  float val[32];
  int idx[32];
  float prefix[kThreads];
  int token;
};

/// What shapes a draw once the row's logits are final.
struct draw_rule {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
  float uniform;
};

/// The token the rule draws from `row` (vocab); every thread of the block gets it, and every
/// thread must call (it synchronizes).
template <typename T>
__device__ int draw_token(const T* row, int64_t vocab, const draw_rule& rule, draw_scratch& s) {
  float max_logit;
  int argmax_idx;
  row_argmax(row, vocab, s.val, s.idx, max_logit, argmax_idx);
  if (!(rule.temperature > 0.0f) || max_logit == -INFINITY) return argmax_idx;
  const float inv_temp = 1.0f / rule.temperature;

  // Top-k: the k-th largest probability, as the largest bit pattern b with count(>= b) >= k.
  uint32_t k_bits = 0;
  const int64_t k = rule.top_k;
  if (k > 0 && k < vocab) {
    for (int bit = 30; bit >= 0; --bit) {
      const uint32_t candidate = k_bits | (1u << bit);
      float count = 0.0f;  // exact: at most 2^24 per thread sum
      for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
        count += prob_bits(row, j, max_logit, inv_temp) >= candidate ? 1.0f : 0.0f;
      count = block_sum(count, s.val);
      if (count >= static_cast<float>(k)) k_bits = candidate;
    }
  }

  // Top-p over the top-k survivors: the largest b whose kept mass reaches top_p of theirs.
  uint32_t p_bits = k_bits;
  const float p = rule.top_p;
  if (p < 1.0f) {
    float kept_mass = 0.0f;
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
      const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
      kept_mass += b >= k_bits ? __uint_as_float(b) : 0.0f;
    }
    const float target = block_sum(kept_mass, s.val) * fmaxf(p, 0.0f);
    uint32_t bits = 0;
    for (int bit = 30; bit >= 0; --bit) {
      const uint32_t candidate = bits | (1u << bit);
      const uint32_t floor_bits = max(candidate, k_bits);
      float mass = 0.0f;
      for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
        const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
        mass += b >= floor_bits ? __uint_as_float(b) : 0.0f;
      }
      mass = block_sum(mass, s.val);
      if (mass > 0.0f && mass >= target) bits = candidate;  // mass > 0: top_p = 0 keeps the top
    }
    p_bits = max(bits, k_bits);
  }

  // Min-p: the largest probability is exp(0) = 1, so the threshold is min_p itself (at most 1,
  // which the largest always passes).
  if (rule.min_p > 0.0f) p_bits = max(p_bits, __float_as_uint(fminf(rule.min_p, 1.0f)));

  // Inverse CDF in index order: each thread owns a contiguous chunk of the vocabulary.
  const int64_t chunk = (vocab + blockDim.x - 1) / blockDim.x;
  const int64_t begin = min(vocab, threadIdx.x * chunk), end = min(vocab, begin + chunk);
  float sum = 0.0f;
  for (int64_t j = begin; j < end; ++j) {
    const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
    sum += b >= p_bits ? __uint_as_float(b) : 0.0f;
  }
  s.prefix[threadIdx.x] = sum;
  if (threadIdx.x == 0) s.token = argmax_idx;  // the fallback should rounding miss every chunk
  __syncthreads();
  // Inclusive scan (Hillis-Steele) of the chunk sums.
  for (int offset = 1; offset < kThreads; offset <<= 1) {
    const float add = threadIdx.x >= offset ? s.prefix[threadIdx.x - offset] : 0.0f;
    __syncthreads();
    s.prefix[threadIdx.x] += add;
    __syncthreads();
  }
  const float total = s.prefix[kThreads - 1];
  const float target = rule.uniform * total;
  const float before = threadIdx.x > 0 ? s.prefix[threadIdx.x - 1] : 0.0f;
  if (sum > 0.0f && before <= target && target < s.prefix[threadIdx.x]) {
    // Exactly one thread gets here: the scanned intervals tile [0, total).
    float cumulative = before;
    int found = -1, last_kept = -1;
    for (int64_t j = begin; j < end && found < 0; ++j) {
      const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
      if (b < p_bits || b == 0) continue;
      last_kept = static_cast<int>(j);
      cumulative += __uint_as_float(b);
      if (cumulative > target) found = last_kept;
    }
    // The running sum may round below the scanned one: then the chunk's last kept token.
    s.token = found >= 0 ? found : last_kept;
  }
  __syncthreads();
  return s.token;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const T* __restrict__ logits,  // (n, vocab)
                  int64_t vocab,
                  const float* __restrict__ temperatures,  // (n)
                  const int32_t* __restrict__ top_k,       // (n)
                  const float* __restrict__ top_p,         // (n)
                  const float* __restrict__ uniforms,      // (n)
                  int32_t* __restrict__ tokens) {          // (n)
  __shared__ draw_scratch s;
  const int64_t r = blockIdx.x;
  const draw_rule rule{temperatures[r], top_k[r], top_p[r], 0.0f, uniforms[r]};
  const int token = draw_token(logits + r * vocab, vocab, rule, s);
  if (threadIdx.x == 0) tokens[r] = token;
}

/// A logit after one edit: bias, repetition, presence and frequency, in the host's order.
/// Each step rounds once (no fused multiply-add), as the host's float code does.
__device__ __forceinline__ float edited_logit(float l, const logit_edit& e, const row_sampling& p) {
  l = __fadd_rn(l, e.bias);
  if (e.seen && p.repetition_penalty != 1.0f)
    l = l > 0.0f ? __fdiv_rn(l, p.repetition_penalty) : __fmul_rn(l, p.repetition_penalty);
  if (e.output_count > 0 && (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f))
    l = __fsub_rn(l, __fadd_rn(__fmul_rn(p.frequency_penalty, static_cast<float>(e.output_count)),
                               p.presence_penalty));
  return l;
}

// `logits` is written and then read by other threads of the block: no __restrict__, so that
// no read goes through the read-only cache.
__global__ void __launch_bounds__(kThreads)
    sample_rows_kernel(float* logits,  // (n, vocab)
                       int64_t vocab,
                       const row_sampling* __restrict__ params,   // (n)
                       const int32_t* __restrict__ edit_offsets,  // (n + 1)
                       const logit_edit* __restrict__ edits,      // (edit_offsets[n])
                       const int32_t* __restrict__ mask_of_row,   // (n) or null
                       const uint32_t* __restrict__ masks,        // (num_masks, words_per_row)
                       int64_t words_per_row,
                       int32_t* __restrict__ tokens) {  // (n)
  __shared__ draw_scratch s;
  const int64_t r = blockIdx.x;
  float* row = logits + r * vocab;
  const row_sampling p = params[r];
  const int32_t mask = mask_of_row ? mask_of_row[r] : -1;
  if (mask >= 0)
    mask_logits_row(row, vocab, masks + mask * words_per_row, words_per_row, threadIdx.x,
                    blockDim.x);
  __syncthreads();  // the mask's writes before the edits read
  // Each token appears once in a row's edits: no two threads touch one logit.
  for (int64_t e = edit_offsets[r] + threadIdx.x; e < edit_offsets[r + 1]; e += blockDim.x) {
    const logit_edit edit = edits[e];
    row[edit.token] = edited_logit(row[edit.token], edit, p);
  }
  __syncthreads();  // global writes of the block are visible to it after the barrier
  const draw_rule rule{p.temperature, p.top_k, p.top_p, p.min_p, p.uniform};
  const int token = draw_token(row, vocab, rule, s);
  if (threadIdx.x == 0) tokens[r] = token;
}

}  // namespace

void argmax(const void* logits, int64_t n, int64_t vocab, int32_t* tokens, dtype t,
            cudaStream_t stream) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_DTYPE(
      t, T,
      argmax_kernel<T><<<n, kThreads, 0, stream>>>(static_cast<const T*>(logits), vocab, tokens));
  CUDA_CHECK_LAUNCH();
}

void sample_top_k_top_p(const void* logits, int64_t n, int64_t vocab, const float* temperatures,
                        const int32_t* top_k, const float* top_p, const float* uniforms,
                        int32_t* tokens, dtype t, cudaStream_t stream) {
  if (n == 0) return;
  ACTORLLM_DISPATCH_DTYPE(
      t, T,
      sample_kernel<T><<<n, kThreads, 0, stream>>>(static_cast<const T*>(logits), vocab,
                                                   temperatures, top_k, top_p, uniforms, tokens));
  CUDA_CHECK_LAUNCH();
}

void sample_rows(float* logits, int64_t n, int64_t vocab, const row_sampling* params,
                 const int32_t* edit_offsets, const logit_edit* edits, const int32_t* mask_of_row,
                 const uint32_t* masks, int64_t words_per_row, int32_t* tokens,
                 cudaStream_t stream) {
  if (n == 0) return;
  sample_rows_kernel<<<n, kThreads, 0, stream>>>(logits, vocab, params, edit_offsets, edits,
                                                 mask_of_row, masks, words_per_row, tokens);
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda
