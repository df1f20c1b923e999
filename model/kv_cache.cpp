#include "model/kv_cache.hpp"

#include <cstring>

namespace actorllm {

kv_cache::kv_cache(const kv_cache_shape& shape) : shape_(shape) {
  const int64_t bytes = shape.num_blocks * shape.block_elems() * shape.element_bytes();
  for (int64_t layer = 0; layer < shape.num_layers; ++layer) {
    k_.emplace_back(new std::byte[bytes]);
    v_.emplace_back(new std::byte[bytes]);
  }
}

void kv_cache::copy_blocks(const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  const int64_t block_bytes = shape_.block_elems() * shape_.element_bytes();
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer)
    for (auto* tensor : {k_[layer].get(), v_[layer].get()})
      for (auto [src, dst] : pairs)
        std::memcpy(tensor + dst * block_bytes, tensor + src * block_bytes, block_bytes);
}

void kv_cache::copy_from(const kv_cache& from,
                         const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  if (from.shape_.dtype != shape_.dtype)
    throw std::logic_error("kv_cache::copy_from: the two caches hold different element types");
  const int64_t block_bytes = shape_.block_elems() * shape_.element_bytes();
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    for (auto [src, dst] : pairs) {
      std::memcpy(k_[layer].get() + dst * block_bytes, from.k_[layer].get() + src * block_bytes,
                  block_bytes);
      std::memcpy(v_[layer].get() + dst * block_bytes, from.v_[layer].get() + src * block_bytes,
                  block_bytes);
    }
  }
}

}  // namespace actorllm
