// Sampling kernels: one block of kThreads per row. Top-k and top-p thresholds are found by a
// bitwise search over the float bits of the (unnormalized) probabilities, which order as
// unsigned integers because they are non-negative: 31 counting passes per threshold, no sort
// and no workspace.
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/sampling.cuh"

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

template <typename T>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const T* __restrict__ logits,  // (n, vocab)
                  int64_t vocab,
                  const float* __restrict__ temperatures,  // (n)
                  const int32_t* __restrict__ top_k,       // (n)
                  const float* __restrict__ top_p,         // (n)
                  const float* __restrict__ uniforms,      // (n)
                  int32_t* __restrict__ tokens) {          // (n)
  __shared__ float s_val[32];
  __shared__ int s_idx[32];
  __shared__ float s_prefix[kThreads];
  __shared__ int s_token;
  const int64_t r = blockIdx.x;
  const T* row = logits + r * vocab;
  float max_logit;
  int argmax_idx;
  row_argmax(row, vocab, s_val, s_idx, max_logit, argmax_idx);
  const float temperature = temperatures[r];
  if (!(temperature > 0.0f) || max_logit == -INFINITY) {
    if (threadIdx.x == 0) tokens[r] = argmax_idx;
    return;
  }
  const float inv_temp = 1.0f / temperature;

  // Top-k: the k-th largest probability, as the largest bit pattern b with count(>= b) >= k.
  uint32_t k_bits = 0;
  const int64_t k = top_k[r];
  if (k > 0 && k < vocab) {
    for (int bit = 30; bit >= 0; --bit) {
      const uint32_t candidate = k_bits | (1u << bit);
      float count = 0.0f;  // exact: at most 2^24 per thread sum
      for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x)
        count += prob_bits(row, j, max_logit, inv_temp) >= candidate ? 1.0f : 0.0f;
      count = block_sum(count, s_val);
      if (count >= static_cast<float>(k)) k_bits = candidate;
    }
  }

  // Top-p over the top-k survivors: the largest b whose kept mass reaches top_p of theirs.
  uint32_t p_bits = k_bits;
  const float p = top_p[r];
  if (p < 1.0f) {
    float kept_mass = 0.0f;
    for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
      const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
      kept_mass += b >= k_bits ? __uint_as_float(b) : 0.0f;
    }
    const float target = block_sum(kept_mass, s_val) * fmaxf(p, 0.0f);
    uint32_t bits = 0;
    for (int bit = 30; bit >= 0; --bit) {
      const uint32_t candidate = bits | (1u << bit);
      const uint32_t floor_bits = max(candidate, k_bits);
      float mass = 0.0f;
      for (int64_t j = threadIdx.x; j < vocab; j += blockDim.x) {
        const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
        mass += b >= floor_bits ? __uint_as_float(b) : 0.0f;
      }
      mass = block_sum(mass, s_val);
      if (mass > 0.0f && mass >= target) bits = candidate;  // mass > 0: top_p = 0 keeps the top
    }
    p_bits = max(bits, k_bits);
  }

  // Inverse CDF in index order: each thread owns a contiguous chunk of the vocabulary.
  const int64_t chunk = (vocab + blockDim.x - 1) / blockDim.x;
  const int64_t begin = min(vocab, threadIdx.x * chunk), end = min(vocab, begin + chunk);
  float sum = 0.0f;
  for (int64_t j = begin; j < end; ++j) {
    const uint32_t b = prob_bits(row, j, max_logit, inv_temp);
    sum += b >= p_bits ? __uint_as_float(b) : 0.0f;
  }
  s_prefix[threadIdx.x] = sum;
  if (threadIdx.x == 0) s_token = argmax_idx;  // the fallback should rounding miss every chunk
  __syncthreads();
  // Inclusive scan (Hillis-Steele) of the chunk sums.
  for (int offset = 1; offset < kThreads; offset <<= 1) {
    const float add = threadIdx.x >= offset ? s_prefix[threadIdx.x - offset] : 0.0f;
    __syncthreads();
    s_prefix[threadIdx.x] += add;
    __syncthreads();
  }
  const float total = s_prefix[kThreads - 1];
  const float target = uniforms[r] * total;
  const float before = threadIdx.x > 0 ? s_prefix[threadIdx.x - 1] : 0.0f;
  if (sum > 0.0f && before <= target && target < s_prefix[threadIdx.x]) {
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
    s_token = found >= 0 ? found : last_kept;
  }
  __syncthreads();
  if (threadIdx.x == 0) tokens[r] = s_token;
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

}  // namespace actorllm::cuda
