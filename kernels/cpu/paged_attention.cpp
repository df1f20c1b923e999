// Attention over the paged KV cache for a varlen batch (prefill, chunked prefill and decode
// in one call). Work is split over (sequence, query token, head) items; each item scans its
// visible keys block by block, so cost follows the real context, not the longest one.
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
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < head_dim; ++d) dot += query[d] * static_cast<float>(key[d]);
        scores[first + j] = dot * scale;
        max_score = std::max(max_score, dot * scale);
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
        const float weight = scores[first + j];
#pragma omp simd
        for (int64_t d = 0; d < head_dim; ++d) dst[d] += weight * static_cast<float>(value[d]);
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
