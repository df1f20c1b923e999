#include "model/kv_cache.hpp"

#include <cstring>
#include <string>

#include "kernels/cpu/ops.hpp"

namespace actorllm {

kv_cache::kv_cache(const kv_cache_shape& shape) : shape_(shape) {
  const int64_t bytes = shape.num_blocks * shape.block_elems() * shape.element_bytes();
  for (int64_t layer = 0; layer < shape.num_layers; ++layer) {
    const auto size = static_cast<std::size_t>(bytes);
    k_.emplace_back(static_cast<std::byte*>(cpu::allocate_pages(size)), cpu::page_deleter{size});
    v_.emplace_back(static_cast<std::byte*>(cpu::allocate_pages(size)), cpu::page_deleter{size});
    k_tensors_.push_back(k_.back().get());
    v_tensors_.push_back(v_.back().get());
  }
}

cpu::paged_cache_view kv_cache::view() {
  const cpu::cache_element element =
      shape_.dtype == kv_cache_dtype::float16  ? cpu::cache_element::f16
      : shape_.dtype == kv_cache_dtype::float8 ? cpu::cache_element::f8
                                               : cpu::cache_element::f32;
  return {k_tensors_.data(), v_tensors_.data(), shape_.num_layers, element, shape_.block_size};
}

int64_t kv_cache::block_bytes() const {
  return shape_.block_elems() * shape_.element_bytes();
}

void kv_cache::copy_blocks(const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  std::vector<void*> ks, vs;
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    ks.push_back(k_[layer].get());
    vs.push_back(v_[layer].get());
  }
  cpu::copy_blocks(ks, vs, pairs, block_bytes());
}

void kv_cache::copy_from(const kv_cache& from,
                         const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  if (from.shape_.dtype != shape_.dtype)
    throw std::logic_error("kv_cache::copy_from: the two caches hold different element types");
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    cpu::swap_blocks(from.k_[layer].get(), k_[layer].get(), pairs, block_bytes());
    cpu::swap_blocks(from.v_[layer].get(), v_[layer].get(), pairs, block_bytes());
  }
}

void kv_cache::check_block_copy(int32_t block, std::size_t bytes) const {
  if (block < 0 || block >= shape_.num_blocks)
    throw std::out_of_range("kv_cache: block " + std::to_string(block) + " of " +
                            std::to_string(shape_.num_blocks));
  if (static_cast<int64_t>(bytes) != shape_.bytes_per_block())
    throw std::invalid_argument("kv_cache: a block is " + std::to_string(shape_.bytes_per_block()) +
                                " bytes, not " + std::to_string(bytes));
}

void kv_cache::export_block(int32_t block, std::span<std::byte> out) const {
  check_block_copy(block, out.size());
  const int64_t n = block_bytes();
  std::byte* to = out.data();
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    std::memcpy(to, k_[layer].get() + block * n, static_cast<std::size_t>(n));
    std::memcpy(to + n, v_[layer].get() + block * n, static_cast<std::size_t>(n));
    to += 2 * n;
  }
}

void kv_cache::import_block(std::span<const std::byte> in, int32_t block) {
  check_block_copy(block, in.size());
  const int64_t n = block_bytes();
  const std::byte* from = in.data();
  for (int64_t layer = 0; layer < shape_.num_layers; ++layer) {
    std::memcpy(k_[layer].get() + block * n, from, static_cast<std::size_t>(n));
    std::memcpy(v_[layer].get() + block * n, from + n, static_cast<std::size_t>(n));
    from += 2 * n;
  }
}

}  // namespace actorllm
