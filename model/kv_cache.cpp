#include "model/kv_cache.hpp"

#include "kernels/cpu/ops.hpp"

namespace actorllm {

kv_cache::kv_cache(const kv_cache_shape& shape) : shape_(shape) {
  const int64_t elems = shape.num_blocks * shape.block_elems();
  for (int64_t layer = 0; layer < shape.num_layers; ++layer) {
    k_.emplace_back(new float[elems]);
    v_.emplace_back(new float[elems]);
  }
}

void kv_cache::copy_blocks(const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  if (pairs.empty()) return;
  std::vector<float*> ks, vs;
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    ks.push_back(k(layer));
    vs.push_back(v(layer));
  }
  cpu::copy_blocks(ks, vs, pairs, shape_.block_elems());
}

void kv_cache::copy_from(const kv_cache& from,
                         const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  if (pairs.empty()) return;
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    cpu::swap_blocks(from.k(layer), k(layer), pairs, shape_.block_elems());
    cpu::swap_blocks(from.v(layer), v(layer), pairs, shape_.block_elems());
  }
}

}  // namespace actorllm
