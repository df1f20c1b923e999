// Attention over the paged KV cache for a varlen batch (prefill, chunked prefill and decode
// in one call). Work is split over (sequence, query token, KV head) items, each covering the
// query heads that share the KV head, and a prefill chunk's tokens over tiles of sixteen query
// rows (attention_tile_avx512.cpp, attention_tile_avx2.cpp); each scans its visible keys block
// by block, so cost follows the real context, not the longest one. The AVX-512 kernels run
// where the CPU, the shape and kernel_isa_in_use() allow, else the AVX2 ones where the CPU and
// shape allow, else the portable one below.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/cpu/attention_item.hpp"
#include "kernels/cpu/kernel_isa.hpp"

namespace actorllm::cpu {

namespace detail {

namespace {

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

/// ...and for float16 and float8 rows, one element at a time.
template <class T>
float dot(const float* query, const T* key, int64_t n) {
  float sum = 0.0f;
  for (int64_t d = 0; d < n; ++d) sum += query[d] * static_cast<float>(key[d]);
  return sum;
}

template <class T>
void add_scaled(float weight, const T* value, float* dst, int64_t n) {
  for (int64_t d = 0; d < n; ++d) dst[d] += weight * static_cast<float>(value[d]);
}

template <class T>
void attend_one_key_at_a_time(const attention_item& item, const T* k_cache, const T* v_cache,
                              float* scores) {
  const int64_t d = item.head_dim;
  const int32_t base = item.base();
  const int32_t count_all = item.visible - base;
  for (int64_t g = 0; g < item.group; ++g) {
    const float* query = item.query + g * d;
    float max_score = -INFINITY;
    for (int32_t b = item.first_block(), first = base; first < item.visible;
         ++b, first += item.block_size) {
      const T* key = item.rows_in_block(k_cache, b);
      const int32_t count = std::min<int32_t>(item.block_size, item.visible - first);
      for (int32_t j = 0; j < count; ++j, key += d) {
        float score = -INFINITY;
        if (first + j >= item.window_start) {
          score = dot(query, key, d) * item.scale;
          if (item.softcap > 0) score = item.softcap * std::tanh(score / item.softcap);
        }
        scores[first - base + j] = score;
        max_score = std::max(max_score, score);
      }
    }
    float sum = 0.0f;
    for (int32_t k = 0; k < count_all; ++k) {
      scores[k] = std::exp(scores[k] - max_score);
      sum += scores[k];
    }
    float* dst = item.out + g * d;
    std::fill(dst, dst + d, 0.0f);
    for (int32_t b = item.first_block(), first = base; first < item.visible;
         ++b, first += item.block_size) {
      const T* value = item.rows_in_block(v_cache, b);
      const int32_t count = std::min<int32_t>(item.block_size, item.visible - first);
      for (int32_t j = 0; j < count; ++j, value += d)
        add_scaled(scores[first - base + j], value, dst, d);
    }
    const float inverse_sum = 1.0f / sum;
#pragma omp simd
    for (int64_t i = 0; i < d; ++i) dst[i] *= inverse_sum;
  }
}

}  // namespace

void softcap_scores(float* row, int64_t count, float softcap) {
  for (int64_t k = 0; k < count; ++k)
    if (std::isfinite(row[k])) row[k] = softcap * std::tanh(row[k] / softcap);
}

void attend_portable(const attention_item& item, const float* k_cache, const float* v_cache,
                     float* scratch) {
  attend_one_key_at_a_time(item, k_cache, v_cache, scratch);
}

void attend_portable(const attention_item& item, const half* k_cache, const half* v_cache,
                     float* scratch) {
  attend_one_key_at_a_time(item, k_cache, v_cache, scratch);
}

void attend_portable(const attention_item& item, const float8_e4m3* k_cache,
                     const float8_e4m3* v_cache, float* scratch) {
  attend_one_key_at_a_time(item, k_cache, v_cache, scratch);
}

}  // namespace detail

namespace {

struct item_index {
  int32_t seq;
  int32_t token;  // index into the flattened query tokens
  int32_t kv_head;
};

/// A sequence with at least this many query tokens (a prefill chunk) is attended in tiles of
/// sixteen query rows (detail::attention_tile) where the AVX-512 or AVX2 kernel runs: at 896
/// tokens of the 110M model, one query at a time took 46 % of the prefill.
constexpr int32_t tile_min_tokens = 8;

struct tile_index {
  int32_t seq;
  int32_t token;   // the first of the tile's tokens
  int32_t tokens;  // tokens in the tile, each with the query heads of kv_head
  int32_t kv_head;
};

template <class T>
void attend(const float* q, const T* k_cache, const T* v_cache, const paged_batch& batch,
            int64_t num_heads, int64_t num_kv_heads, int64_t head_dim, int64_t block_size,
            const attention_options& options, float* out) {
  const int64_t group = num_heads / num_kv_heads;
  const int64_t num_tokens = batch.query_start_loc[batch.num_seqs];
  const bool use_avx512 =
      uses_avx512(kernel_isa_in_use()) && detail::avx512_attention_usable(head_dim, block_size);
  const bool use_avx2 = detail::avx2_attention_usable(head_dim, block_size);
  const int32_t tokens_per_tile = static_cast<int32_t>(detail::attention_tile::lanes / group);
  const bool tiles_allowed = (use_avx512 || use_avx2) && tokens_per_tile > 0;

  // The keys [window_start, visible) query token t of sequence s sees.
  auto keys_of = [&](int32_t s, int32_t t) {
    const int32_t q_len = batch.query_start_loc[s + 1] - batch.query_start_loc[s];
    const int32_t position = batch.seq_lens[s] - q_len + (t - batch.query_start_loc[s]);
    int32_t window_start = options.sliding_window > 0
                               ? std::max<int32_t>(0, position + 1 - options.sliding_window)
                               : 0;
    int32_t visible = position + 1;
    // A span seen both ways (an image's tokens): its keys too, past the window and ahead.
    if (const int32_t* span = batch.visible_spans ? batch.visible_spans + 2 * t : nullptr;
        span && span[1] > span[0]) {
      window_start = std::min(window_start, span[0]);
      visible = std::max(visible, span[1]);
    }
    return std::pair{window_start, visible};
  };

  // Flattened work lists, sized by tokens * KV heads, not by context; their storage is reused.
  // Named references, so that the team's helpers read the caller's lists, not their own.
  thread_local std::vector<item_index> caller_items;
  thread_local std::vector<tile_index> caller_tiles;
  std::vector<item_index>& items = caller_items;
  std::vector<tile_index>& tiles = caller_tiles;
  items.clear();
  tiles.clear();
  items.reserve(num_tokens * num_kv_heads);
  for (int32_t s = 0; s < batch.num_seqs; ++s) {
    const int32_t begin = batch.query_start_loc[s], end = batch.query_start_loc[s + 1];
    if (tiles_allowed && end - begin >= tile_min_tokens) {
      // The last tokens first: they see the most keys, and the list is handed out in order.
      for (int32_t last = end; last > begin; last -= tokens_per_tile) {
        const int32_t first = std::max(begin, last - tokens_per_tile);
        for (int32_t h = 0; h < num_kv_heads; ++h) tiles.push_back({s, first, last - first, h});
      }
      continue;
    }
    for (int32_t t = begin; t < end; ++t)
      for (int32_t h = 0; h < num_kv_heads; ++h) items.push_back({s, t, h});
  }

  parallel_for_dynamic(static_cast<int64_t>(tiles.size()), 1, [&](int, int64_t i) {
    const auto [s, first_token, tokens, kv_head] = tiles[i];
    detail::attention_tile tile{};
    for (int32_t j = 0; j < tokens; ++j) {
      const int32_t t = first_token + j;
      const auto [window_start, visible] = keys_of(s, t);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t lane = j * group + g;
        const int64_t row = (t * num_heads + kv_head * group + g) * head_dim;
        tile.query[lane] = q + row;
        tile.out[lane] = out + row;
        tile.window_start[lane] = window_start;
        tile.visible[lane] = visible;
      }
    }
    tile.rows = static_cast<int>(tokens * group);
    tile.blocks = batch.block_tables + s * batch.max_blocks_per_seq;
    tile.head_dim = head_dim;
    tile.block_size = block_size;
    tile.block_elems = num_kv_heads * block_size * head_dim;
    tile.head_offset = kv_head * block_size * head_dim;
    tile.scale = options.scale;
    tile.softcap = options.softcap;
    thread_local std::vector<float> scratch;  // per thread: one tile's
    const int64_t need = detail::attention_tile_scratch::floats(tile);
    if (static_cast<int64_t>(scratch.size()) < need) scratch.resize(need);
    if (use_avx512)
      detail::attend_tile_avx512(tile, k_cache, v_cache, scratch.data());
    else
      detail::attend_tile_avx2(tile, k_cache, v_cache, scratch.data());
  });

  parallel_for_dynamic(static_cast<int64_t>(items.size()), 4, [&](int, int64_t i) {
    const auto [s, t, kv_head] = items[i];
    const int64_t first_head = kv_head * group;
    const auto [window_start, visible] = keys_of(s, t);
    const detail::attention_item item{
        .query = q + (t * num_heads + first_head) * head_dim,
        .out = out + (t * num_heads + first_head) * head_dim,
        .blocks = batch.block_tables + s * batch.max_blocks_per_seq,
        .visible = visible,
        .group = group,
        .head_dim = head_dim,
        .block_size = block_size,
        .block_elems = num_kv_heads * block_size * head_dim,
        .head_offset = kv_head * block_size * head_dim,
        .scale = options.scale,
        .window_start = window_start,
        .softcap = options.softcap,
    };
    thread_local std::vector<float> scratch;  // per thread: the scores of one item
    const int64_t need = detail::attention_scratch_floats(item);
    if (static_cast<int64_t>(scratch.size()) < need) scratch.resize(need);
    if (use_avx512)
      detail::attend_avx512(item, k_cache, v_cache, scratch.data());
    else if (use_avx2)
      detail::attend_avx2(item, k_cache, v_cache, scratch.data());
    else
      detail::attend_portable(item, k_cache, v_cache, scratch.data());
  });
}

}  // namespace

void paged_attention(const float* q, const float* k_cache, const float* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, const attention_options& options,
                     float* out) {
  attend(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size, options, out);
}

void paged_attention(const float* q, const half* k_cache, const half* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, const attention_options& options,
                     float* out) {
  attend(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size, options, out);
}

void paged_attention(const float* q, const float8_e4m3* k_cache, const float8_e4m3* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, const attention_options& options,
                     float* out) {
  attend(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size, options, out);
}

void paged_attention(const float* q, const float* k_cache, const float* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out) {
  paged_attention(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size,
                  attention_options{scale}, out);
}

void paged_attention(const float* q, const half* k_cache, const half* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out) {
  paged_attention(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size,
                  attention_options{scale}, out);
}

void paged_attention(const float* q, const float8_e4m3* k_cache, const float8_e4m3* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out) {
  paged_attention(q, k_cache, v_cache, batch, num_heads, num_kv_heads, head_dim, block_size,
                  attention_options{scale}, out);
}

}  // namespace actorllm::cpu
