// Paged KV cache bookkeeping on the CPU: write new K/V into slots, copy and swap blocks.
#include <cstddef>
#include <cstring>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu {

namespace {

/// One row of float32 into the cache's element type, each value rounded to nearest (ties to
/// even) as static_cast does: eight at a time through F16C where the CPU has it (a decode step
/// of 32 streams writes 590 thousand values on the 110M model; one at a time they took 1.5 ms).
ACTORLLM_AVX2 void store_row_f16c(const float* src, half* dst, int64_t n) {
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + d),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + d), _MM_FROUND_TO_NEAREST_INT));
  for (; d < n; ++d) dst[d] = static_cast<half>(src[d]);
}

void store_row(const float* src, float* dst, int64_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}

void store_row(const float* src, half* dst, int64_t n) {
  if (cpu_has_avx2()) return store_row_f16c(src, dst, n);
  for (int64_t d = 0; d < n; ++d) dst[d] = static_cast<half>(src[d]);
}

void store_row(const float* src, float8_e4m3* dst, int64_t n) {
  for (int64_t d = 0; d < n; ++d) dst[d] = float8_e4m3(src[d]);
}

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
      store_row(key + src, k_cache + dst, head_dim);
      store_row(value + src, v_cache + dst, head_dim);
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

void reshape_and_cache(const float* key, const float* value, float8_e4m3* k_cache,
                       float8_e4m3* v_cache, const int64_t* slot_mapping, int64_t n,
                       int64_t num_kv_heads, int64_t head_dim, int64_t block_size) {
  write_slots(key, value, k_cache, v_cache, slot_mapping, n, num_kv_heads, head_dim, block_size);
}

void copy_blocks(const std::vector<void*>& k_caches, const std::vector<void*>& v_caches,
                 const std::vector<std::pair<int32_t, int32_t>>& pairs, int64_t block_bytes) {
  for (const auto* caches : {&k_caches, &v_caches})
    for (void* cache : *caches) {
      auto* bytes = static_cast<std::byte*>(cache);
      for (auto [src, dst] : pairs)
        std::memcpy(bytes + dst * block_bytes, bytes + src * block_bytes, block_bytes);
    }
}

void swap_blocks(const void* from, void* to, const std::vector<std::pair<int32_t, int32_t>>& pairs,
                 int64_t block_bytes) {
  const auto* src_bytes = static_cast<const std::byte*>(from);
  auto* dst_bytes = static_cast<std::byte*>(to);
  for (auto [src, dst] : pairs)
    std::memcpy(dst_bytes + dst * block_bytes, src_bytes + src * block_bytes, block_bytes);
}

}  // namespace actorllm::cpu
