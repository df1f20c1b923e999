// Paged KV cache bookkeeping on the CPU: write new K/V into slots, copy and swap blocks.
#include <cstring>
#include <type_traits>

#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

namespace {

template <class T>
void write_slots(const float* key, const float* value, T* k_cache, T* v_cache,
                 const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads, int64_t head_dim,
                 int64_t block_size) {
  const int64_t block_elems = num_kv_heads * block_size * head_dim;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    const int64_t block = slot / block_size;
    const int64_t offset = slot % block_size;
    for (int64_t h = 0; h < num_kv_heads; ++h) {
      const int64_t src = (t * num_kv_heads + h) * head_dim;
      const int64_t dst = block * block_elems + (h * block_size + offset) * head_dim;
      if constexpr (std::is_same_v<T, float>) {
        std::memcpy(k_cache + dst, key + src, head_dim * sizeof(float));
        std::memcpy(v_cache + dst, value + src, head_dim * sizeof(float));
      } else {
        for (int64_t d = 0; d < head_dim; ++d) {
          k_cache[dst + d] = static_cast<T>(key[src + d]);
          v_cache[dst + d] = static_cast<T>(value[src + d]);
        }
      }
    }
  }
}

}  // namespace

void reshape_and_cache(const float* key, const float* value, float* k_cache, float* v_cache,
                       const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads,
                       int64_t head_dim, int64_t block_size) {
  write_slots(key, value, k_cache, v_cache, slot_mapping, n, num_kv_heads, head_dim, block_size);
}

void reshape_and_cache(const float* key, const float* value, half* k_cache, half* v_cache,
                       const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads,
                       int64_t head_dim, int64_t block_size) {
  write_slots(key, value, k_cache, v_cache, slot_mapping, n, num_kv_heads, head_dim, block_size);
}

void copy_blocks(std::vector<float*>& k_caches, std::vector<float*>& v_caches,
                 const std::vector<std::pair<int32_t, int32_t>>& pairs, int64_t block_elems) {
  for (size_t layer = 0; layer < k_caches.size(); ++layer) {
    for (auto [src, dst] : pairs) {
      std::memcpy(k_caches[layer] + dst * block_elems, k_caches[layer] + src * block_elems,
                  block_elems * sizeof(float));
      std::memcpy(v_caches[layer] + dst * block_elems, v_caches[layer] + src * block_elems,
                  block_elems * sizeof(float));
    }
  }
}

void swap_blocks(const float* from, float* to,
                 const std::vector<std::pair<int32_t, int32_t>>& pairs, int64_t block_elems) {
  for (auto [src, dst] : pairs) {
    std::memcpy(to + dst * block_elems, from + src * block_elems, block_elems * sizeof(float));
  }
}

}  // namespace actorllm::cpu
