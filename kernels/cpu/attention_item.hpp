#pragma once
/// One work item of paged attention on the CPU: a query token of one sequence against one KV
/// head, for all the query heads that share that KV head (grouped-query attention reads each
/// key and value row once for the whole group). paged_attention.cpp makes the items and hands
/// them to the threads; the item kernels live here, and the prefill tiles' (attention_tile).
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu::detail {

struct attention_item {
  const float* query;     ///< group rows of head_dim, contiguous (heads of one KV head)
  float* out;             ///< group rows of head_dim
  const int32_t* blocks;  ///< the sequence's block table
  int32_t visible;        ///< keys [window_start, visible) are attended to (causal: position + 1)
  int64_t group;          ///< query heads per KV head
  int64_t head_dim;
  int64_t block_size;
  int64_t block_elems;  ///< elements in one block of one layer's K (or V) cache
  int64_t head_offset;  ///< elements from a block's start to this KV head's rows
  float scale;
  int32_t window_start = 0;  ///< the first key a sliding window lets the query see
  float softcap = 0.0f;      ///< scores become softcap * tanh(score / softcap); 0: off

  /// Blocks before first_block() lie wholly outside the window and are never read (they may
  /// be freed). Scores are kept from base(), the first key of first_block().
  int32_t first_block() const { return window_start / static_cast<int32_t>(block_size); }
  int32_t base() const { return first_block() * static_cast<int32_t>(block_size); }
  /// Score slots per query head: the keys from base() to visible, padded to 8.
  int64_t row_stride() const { return (visible - base() + 7) / 8 * 8; }

  /// The first of this KV head's block_size rows in block b of the sequence (b < blocks
  /// covering `visible`), in a K or V cache.
  template <class T>
  const T* rows_in_block(const T* cache, int32_t b) const {
    return cache + blocks[b] * block_elems + head_offset;
  }
  /// The same rows of block b + 1 where keys [first, first + block_size) of block b are not the
  /// last before `end` (first and end counted alike); null otherwise. The kernels ask for them
  /// while they read block b: a sequence's blocks lie anywhere, and the prefetchers, which
  /// follow a stream, stop at each block's end (32 streams, contexts up to 430 tokens, float16
  /// cache: attention 23 -> 17-19 ms a step).
  template <class T>
  const T* rows_in_next_block(const T* cache, int32_t b, int32_t first, int32_t end) const {
    return first + block_size < end ? rows_in_block(cache, b + 1) : nullptr;
  }
};

/// Floats of scratch an item needs: one row of scores per query head, padded to 8.
inline int64_t attention_scratch_floats(const attention_item& item) {
  return item.group * item.row_stride();
}

/// Soft-caps the finite scores of one row in place (Gemma 2's attention logit capping).
void softcap_scores(float* row, int64_t count, float softcap);

/// Whether the AVX2 kernel can run this shape on this CPU: AVX2, FMA and F16C present, and
/// head_dim and block_size multiples of 8 (rows are read eight floats at a time, and a block's
/// last tile of keys never runs past the block).
bool avx2_attention_usable(int64_t head_dim, int64_t block_size);

/// The AVX2 kernel: keys scored eight at a time, a vectorized exp, values summed in registers.
void attend_avx2(const attention_item& item, const float* k_cache, const float* v_cache,
                 float* scratch);
void attend_avx2(const attention_item& item, const half* k_cache, const half* v_cache,
                 float* scratch);
void attend_avx2(const attention_item& item, const float8_e4m3* k_cache, const float8_e4m3* v_cache,
                 float* scratch);

/// Whether the AVX-512 kernel can run this shape on this CPU: cpu_has_avx512(), head_dim a
/// multiple of 16 and block_size of 8.
bool avx512_attention_usable(int64_t head_dim, int64_t block_size);

/// The AVX-512 kernel: the AVX2 kernel's passes on 16-float registers.
void attend_avx512(const attention_item& item, const float* k_cache, const float* v_cache,
                   float* scratch);
void attend_avx512(const attention_item& item, const half* k_cache, const half* v_cache,
                   float* scratch);
void attend_avx512(const attention_item& item, const float8_e4m3* k_cache,
                   const float8_e4m3* v_cache, float* scratch);

/// A tile of a prefill chunk's attention: up to 16 query rows of one sequence (its tokens times
/// the query heads of one KV head), each row with its own keys [window_start, visible). The
/// rows are the lanes of a 16-float register (two 8-float ones under AVX2): each key row,
/// converted once, feeds all sixteen.
struct attention_tile {
  static constexpr int lanes = 16;
  const float* query[lanes];  ///< head_dim floats each
  float* out[lanes];          ///< head_dim floats each
  int32_t window_start[lanes] = {};
  int32_t visible[lanes] = {};  ///< 0 in the lanes not in use: they see no key
  int rows = 0;                 ///< lanes in use, from the first; the others are not written
  const int32_t* blocks;        ///< the sequence's block table
  int64_t head_dim;
  int64_t block_size;
  int64_t block_elems;  ///< as attention_item's
  int64_t head_offset;  ///< as attention_item's
  float scale;
  float softcap = 0.0f;

  /// The first block any row reads, and the end of the keys any row sees.
  int32_t first_block() const {
    return *std::min_element(window_start, window_start + rows) / static_cast<int32_t>(block_size);
  }
  int32_t end() const { return *std::max_element(visible, visible + rows); }
  /// The keys the scores cover: from the first block's start, whole blocks.
  int64_t padded_keys() const {
    return (end() - first_block() * block_size + block_size - 1) / block_size * block_size;
  }
};

/// A tile's scratch, as both tile kernels lay it out.
struct attention_tile_scratch {
  int32_t first_block;  ///< attention_tile::first_block, derived once for the three passes
  int32_t base;         ///< its first key
  int32_t end;          ///< attention_tile::end
  int64_t keys;         ///< attention_tile::padded_keys
  float* scores;        ///< (keys, lanes): key-major, a lane a row
  float* query;         ///< (head_dim, lanes): the rows' queries, transposed
  float* rows;          ///< (block_size, head_dim): one block's keys or values as float32
  float* sums;          ///< (head_dim, lanes): the weighted values, transposed

  static attention_tile_scratch lay_out(const attention_tile& t, float* scratch) {
    attention_tile_scratch s{};
    s.first_block = t.first_block();
    s.base = s.first_block * static_cast<int32_t>(t.block_size);
    s.end = t.end();
    s.keys = t.padded_keys();
    s.scores = scratch;
    s.query = s.scores + s.keys * attention_tile::lanes;
    s.rows = s.query + t.head_dim * attention_tile::lanes;
    s.sums = s.rows + t.block_size * t.head_dim;
    return s;
  }
  /// The tile's queries into `query`, transposed; the lanes not in use zero.
  void transpose_queries(const attention_tile& t) const {
    for (int64_t c = 0; c < t.head_dim; ++c)
      for (int l = 0; l < attention_tile::lanes; ++l)
        query[c * attention_tile::lanes + l] = l < t.rows ? t.query[l][c] : 0.0f;
  }
  /// Floats of scratch `t` needs.
  static int64_t floats(const attention_tile& t) {
    return (t.padded_keys() + 2 * t.head_dim) * attention_tile::lanes + t.block_size * t.head_dim;
  }
};

/// The tile kernels, where avx512_attention_usable (attention_tile_avx512.cpp) or
/// avx2_attention_usable (attention_tile_avx2.cpp, a row of sixteen lanes in two registers)
/// holds: scores for sixteen rows a key, a softmax down each lane, values weighted sixteen rows
/// at a time.
void attend_tile_avx2(const attention_tile& tile, const float* k_cache, const float* v_cache,
                      float* scratch);
void attend_tile_avx2(const attention_tile& tile, const half* k_cache, const half* v_cache,
                      float* scratch);
void attend_tile_avx2(const attention_tile& tile, const float8_e4m3* k_cache,
                      const float8_e4m3* v_cache, float* scratch);
void attend_tile_avx512(const attention_tile& tile, const float* k_cache, const float* v_cache,
                        float* scratch);
void attend_tile_avx512(const attention_tile& tile, const half* k_cache, const half* v_cache,
                        float* scratch);
void attend_tile_avx512(const attention_tile& tile, const float8_e4m3* k_cache,
                        const float8_e4m3* v_cache, float* scratch);

/// The portable kernel, one key at a time: any shape, any CPU.
void attend_portable(const attention_item& item, const float* k_cache, const float* v_cache,
                     float* scratch);
void attend_portable(const attention_item& item, const half* k_cache, const half* v_cache,
                     float* scratch);
void attend_portable(const attention_item& item, const float8_e4m3* k_cache,
                     const float8_e4m3* v_cache, float* scratch);

}  // namespace actorllm::cpu::detail
