#pragma once
/// The paged KV cache of one worker: for every layer a K and a V tensor of shape
/// (num_blocks, num_kv_heads, block_size, head_dim). Block ids come from the block manager;
/// this class only owns the memory. Pages are touched lazily (allocation does not fill them).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_forward_ops.hpp"
#include "kernels/cpu/host_memory.hpp"
#include "kernels/cpu/ops.hpp"  // cpu::half

namespace actorllm {

/// Element type of a CPU KV cache. float16 halves the bytes per block and the bytes that
/// decode attention reads per step, float8 (E4M3, vLLM's fp8) quarters them; values are
/// rounded once, when written.
enum class kv_cache_dtype { float32, float16, float8 };

/// "float32", "float16" or "float8 (E4M3)", as the startup log names them.
inline const char* kv_cache_dtype_name(kv_cache_dtype dtype) {
  return dtype == kv_cache_dtype::float16  ? "float16"
         : dtype == kv_cache_dtype::float8 ? "float8 (E4M3)"
                                           : "float32";
}

using cpu::float8_e4m3;
using cpu::half;

struct kv_cache_shape {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  kv_cache_dtype dtype = kv_cache_dtype::float32;

  int64_t block_elems() const { return num_kv_heads * block_size * head_dim; }
  int64_t element_bytes() const {
    return dtype == kv_cache_dtype::float16 ? 2 : dtype == kv_cache_dtype::float8 ? 1 : 4;
  }
  /// Bytes of one block across all layers, K and V.
  int64_t bytes_per_block() const { return 2 * num_layers * block_elems() * element_bytes(); }
};

class kv_cache {
 public:
  explicit kv_cache(const kv_cache_shape& shape);

  const kv_cache_shape& shape() const { return shape_; }
  /// A layer's K or V tensor as T, which must match the cache's dtype (float or half).
  template <class T>
  T* k(int64_t layer) {
    return typed<T>(k_[layer]);
  }
  template <class T>
  T* v(int64_t layer) {
    return typed<T>(v_[layer]);
  }

  /// The cache as the CPU forward ops read and write it; valid while the cache lives.
  cpu::paged_cache_view view();

  /// Copy-on-write: copies block src to dst in every layer.
  void copy_blocks(const std::vector<std::pair<int32_t, int32_t>>& pairs);
  /// Copies blocks of `from` (src ids) into this cache (dst ids), every layer: swap in or out.
  void copy_from(const kv_cache& from, const std::vector<std::pair<int32_t, int32_t>>& pairs);
  /// Block `block` of every layer, K then V, layer after layer, into `out`
  /// (shape().bytes_per_block() bytes): what the KV offload tier stores.
  void export_block(int32_t block, std::span<std::byte> out) const;
  /// The inverse of export_block.
  void import_block(std::span<const std::byte> in, int32_t block);

 private:
  /// One block of one layer's K (or V) tensor.
  int64_t block_bytes() const;
  void check_block_copy(int32_t block, std::size_t bytes) const;
  template <class T>
  T* typed(const std::unique_ptr<std::byte, cpu::page_deleter>& bytes) const {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, half> ||
                  std::is_same_v<T, float8_e4m3>);
    if (static_cast<int64_t>(sizeof(T)) != shape_.element_bytes())
      throw std::logic_error("kv_cache: element type does not match the cache's dtype");
    return reinterpret_cast<T*>(bytes.get());
  }

  kv_cache_shape shape_;
  /// Pages of their own (cpu::allocate_pages): freed, they leave resident memory at once.
  std::vector<std::unique_ptr<std::byte, cpu::page_deleter>> k_, v_;
  std::vector<void*> k_tensors_, v_tensors_;  ///< k_ and v_'s pages, for view()
};

}  // namespace actorllm
