// The KV cache's block moves in every element type: a block swapped out to a CPU pool and back
// returns byte for byte (float8 codes included), and pools of different types refuse to mix.
#include "model/kv_cache.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace actorllm {
namespace {

kv_cache_shape shape_of(kv_cache_dtype dtype) {
  kv_cache_shape s;
  s.num_layers = 2;
  s.num_blocks = 4;
  s.block_size = 8;
  s.num_kv_heads = 2;
  s.head_dim = 16;
  s.dtype = dtype;
  return s;
}

TEST(kv_cache, blocks_of_every_type_swap_out_and_back_exactly) {
  for (auto dtype : {kv_cache_dtype::float32, kv_cache_dtype::float16, kv_cache_dtype::float8}) {
    const kv_cache_shape shape = shape_of(dtype);
    kv_cache device(shape), host(shape), back(shape);
    const int64_t block_bytes = shape.block_elems() * shape.element_bytes();
    auto bytes_of = [&](kv_cache& c, int64_t layer, bool k, int64_t block) {
      std::byte* p = nullptr;
      if (dtype == kv_cache_dtype::float8)
        p = reinterpret_cast<std::byte*>(k ? c.k<float8_e4m3>(layer) : c.v<float8_e4m3>(layer));
      else if (dtype == kv_cache_dtype::float16)
        p = reinterpret_cast<std::byte*>(k ? c.k<half>(layer) : c.v<half>(layer));
      else
        p = reinterpret_cast<std::byte*>(k ? c.k<float>(layer) : c.v<float>(layer));
      return p + block * block_bytes;
    };
    for (int64_t layer = 0; layer < shape.num_layers; ++layer)
      for (bool k : {true, false})
        for (int64_t i = 0; i < block_bytes; ++i)  // every byte value, NaN codes among them
          bytes_of(device, layer, k, 1)[i] = static_cast<std::byte>((i * 37 + layer + k) & 0xff);
    host.copy_from(device, {{1, 3}});  // swap out: device block 1 to host block 3
    back.copy_from(host, {{3, 2}});    // swap in: host block 3 to block 2
    for (int64_t layer = 0; layer < shape.num_layers; ++layer)
      for (bool k : {true, false})
        EXPECT_EQ(std::memcmp(bytes_of(device, layer, k, 1), bytes_of(back, layer, k, 2),
                              static_cast<size_t>(block_bytes)),
                  0)
            << "layer " << layer << (k ? " K" : " V");
  }
  kv_cache eight(shape_of(kv_cache_dtype::float8)), sixteen(shape_of(kv_cache_dtype::float16));
  EXPECT_THROW(eight.copy_from(sixteen, {{0, 0}}), std::logic_error);
}

}  // namespace
}  // namespace actorllm
