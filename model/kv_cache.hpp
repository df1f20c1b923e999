#pragma once
/// The paged KV cache of one worker: for every layer a K and a V tensor of shape
/// (num_blocks, num_kv_heads, block_size, head_dim). Block ids come from the block manager;
/// this class only owns the memory. Pages are touched lazily (allocation does not fill them).
#include <cstdint>
#include <memory>
#include <vector>

namespace actorllm {

struct kv_cache_shape {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;

  int64_t block_elems() const { return num_kv_heads * block_size * head_dim; }
  /// Bytes of one block across all layers, K and V (float32).
  int64_t bytes_per_block() const { return 2 * num_layers * block_elems() * 4; }
};

class kv_cache {
 public:
  explicit kv_cache(const kv_cache_shape& shape);

  const kv_cache_shape& shape() const { return shape_; }
  float* k(int64_t layer) { return k_[layer].get(); }
  float* v(int64_t layer) { return v_[layer].get(); }
  const float* k(int64_t layer) const { return k_[layer].get(); }
  const float* v(int64_t layer) const { return v_[layer].get(); }

  /// Copy-on-write: copies block src to dst in every layer.
  void copy_blocks(const std::vector<std::pair<int32_t, int32_t>>& pairs);
  /// Copies blocks of `from` (src ids) into this cache (dst ids), every layer: swap in or out.
  void copy_from(const kv_cache& from, const std::vector<std::pair<int32_t, int32_t>>& pairs);

 private:
  kv_cache_shape shape_;
  std::vector<std::unique_ptr<float[]>> k_, v_;
};

}  // namespace actorllm
