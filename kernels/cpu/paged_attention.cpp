// Attention over the paged KV cache for a varlen batch (prefill, chunked prefill and decode
// in one call). Work is split over (sequence, query token, head) items; each item scans its
// visible keys block by block, so cost follows the real context, not the longest one.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

namespace {

struct attention_item {
  int32_t seq;
  int32_t token;  // index into the flattened query tokens
  int32_t head;
};

/// query . key over n dims, and dst += weight * value over n dims, for float32 rows...
inline float dot(const float* query, const float* key, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < n; ++d) sum += query[d] * key[d];
  return sum;
}

inline void add_scaled(float weight, const float* value, float* dst, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; ++d) dst[d] += weight * value[d];
}

/// ...and for float16 rows: eight at a time through F16C where the CPU has it (GCC does not
/// vectorize the _Float16 conversions by itself), one at a time elsewhere.
bool has_f16c() {
  static const bool yes = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2") &&
                          __builtin_cpu_supports("fma");
  return yes;
}

__attribute__((target("avx2,fma,f16c"))) float dot_f16c(const float* query, const half* key,
                                                        int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t d = 0; d < n; d += 8) {
    const __m256 k = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(key + d)));
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(query + d), k, acc);
  }
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}

__attribute__((target("avx2,fma,f16c"))) void add_scaled_f16c(float weight, const half* value,
                                                              float* dst, int64_t n) {
  const __m256 w = _mm256_set1_ps(weight);
  for (int64_t d = 0; d < n; d += 8) {
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(value + d)));
    _mm256_storeu_ps(dst + d, _mm256_fmadd_ps(w, v, _mm256_loadu_ps(dst + d)));
  }
}

inline float dot(const float* query, const half* key, int64_t n) {
  if (n % 8 == 0 && has_f16c()) return dot_f16c(query, key, n);
  float sum = 0.0f;
  for (int64_t d = 0; d < n; ++d) sum += query[d] * static_cast<float>(key[d]);
  return sum;
}

inline void add_scaled(float weight, const half* value, float* dst, int64_t n) {
  if (n % 8 == 0 && has_f16c()) return add_scaled_f16c(weight, value, dst, n);
  for (int64_t d = 0; d < n; ++d) dst[d] += weight * static_cast<float>(value[d]);
}

template <class T>
void attend(const float* q, const T* k_cache, const T* v_cache, const paged_batch& batch,
            int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int64_t block_size,
            float scale, float* out) {
  const int64_t group = num_heads / num_kv_heads;
  const int64_t block_elems = num_kv_heads * block_size * head_dim;
  const int64_t num_tokens = batch.query_start_loc[batch.num_seqs];

  // Flattened work list, sized by tokens * heads, not by context; its storage is reused.
  // A named reference, so that the team's helpers read the caller's list, not their own.
  thread_local std::vector<attention_item> caller_items;
  std::vector<attention_item>& items = caller_items;
  items.clear();
  items.reserve(num_tokens * num_heads);
  int32_t max_context = 0;
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    max_context = std::max(max_context, batch.seq_lens[s]);
    for (int32_t t = batch.query_start_loc[s]; t < batch.query_start_loc[s + 1]; ++t)
      for (int32_t h = 0; h < num_heads; ++h) items.push_back({s, t, h});
  }

  parallel_for_dynamic(static_cast<int64_t>(items.size()), 4, [&](int, int64_t i) {
    thread_local std::vector<float> scores;  // per thread: the scores of one item
    if (static_cast<int32_t>(scores.size()) < max_context) scores.resize(max_context);
    const auto [s, t, h] = items[i];
    const int32_t q_len = batch.query_start_loc[s + 1] - batch.query_start_loc[s];
    const int32_t position = batch.seq_lens[s] - q_len + (t - batch.query_start_loc[s]);
    const int32_t visible = position + 1;
    const int32_t* blocks = batch.block_tables + s * batch.max_blocks_per_seq;
    const int64_t kv_head = h / group;
    const float* query = q + (t * num_heads + h) * head_dim;

    // Keys and values are walked block by block: a block holds block_size consecutive
    // positions of this KV head contiguously, and no position needs a division.
    const int32_t num_blocks = (visible + block_size - 1) / block_size;
    auto block_rows = [&](const T* cache, int32_t b) {
      return cache + blocks[b] * block_elems + kv_head * block_size * head_dim;
    };
    float max_score = -INFINITY;
    for (int32_t b = 0; b < num_blocks; ++b) {
      const T* key = block_rows(k_cache, b);
      const int32_t first = b * static_cast<int32_t>(block_size);
      const int32_t count = std::min<int32_t>(block_size, visible - first);
      for (int32_t j = 0; j < count; ++j, key += head_dim) {
        const float score = dot(query, key, head_dim) * scale;
        scores[first + j] = score;
        max_score = std::max(max_score, score);
      }
    }
    float sum = 0.0f;
    for (int32_t k = 0; k < visible; ++k) {
      scores[k] = std::exp(scores[k] - max_score);
      sum += scores[k];
    }
    float* dst = out + (t * num_heads + h) * head_dim;
    std::fill(dst, dst + head_dim, 0.0f);
    for (int32_t b = 0; b < num_blocks; ++b) {
      const T* value = block_rows(v_cache, b);
      const int32_t first = b * static_cast<int32_t>(block_size);
      const int32_t count = std::min<int32_t>(block_size, visible - first);
      for (int32_t j = 0; j < count; ++j, value += head_dim) {
        add_scaled(scores[first + j], value, dst, head_dim);
      }
    }
    const float inverse_sum = 1.0f / sum;
#pragma omp simd
    for (int64_t d = 0; d < head_dim; ++d) dst[d] *= inverse_sum;
  });
}

}  // namespace

void paged_attention(const float* q, const float* k_cache, const float* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out) {
  attend(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size, scale, out);
}

void paged_attention(const float* q, const half* k_cache, const half* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out) {
  attend(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size, scale, out);
}

}  // namespace actorllm::cpu
