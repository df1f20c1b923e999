// The second KV tier's bytes: blocks copied out of a KV cache and back are the same bytes, a
// file-backed store lives in its folder until it goes, and a slot whose bytes changed after it
// was sealed (here written through the file, as a bad disk or a stray write would) is refused.
#include "model/kv_tier_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "model/kv_cache.hpp"

namespace actorllm {
namespace {

kv_cache_shape small_shape(int64_t num_blocks) {
  kv_cache_shape shape;
  shape.num_layers = 2;
  shape.num_blocks = num_blocks;
  shape.block_size = 4;
  shape.num_kv_heads = 2;
  shape.head_dim = 8;
  return shape;
}

void fill(kv_cache& cache, int32_t block, float base) {
  const int64_t n = cache.shape().block_elems();
  for (int64_t layer = 0; layer < cache.shape().num_layers; ++layer)
    for (int64_t i = 0; i < n; ++i) {
      cache.k<float>(layer)[block * n + i] = base + float(layer * 1000 + i);
      cache.v<float>(layer)[block * n + i] = -base - float(layer * 1000 + i);
    }
}

std::vector<float> block_values(kv_cache& cache, int32_t block) {
  std::vector<float> out;
  const int64_t n = cache.shape().block_elems();
  for (int64_t layer = 0; layer < cache.shape().num_layers; ++layer) {
    out.insert(out.end(), cache.k<float>(layer) + block * n,
               cache.k<float>(layer) + (block + 1) * n);
    out.insert(out.end(), cache.v<float>(layer) + block * n,
               cache.v<float>(layer) + (block + 1) * n);
  }
  return out;
}

TEST(KvTierStore, ABlockComesBackAsItWasStored) {
  kv_cache cache(small_shape(3));
  fill(cache, 1, 5.f);
  kv_tier_store store(4, cache.shape().bytes_per_block(), "");
  EXPECT_TRUE(store.path().empty());
  EXPECT_FALSE(store.intact(2));  // never sealed: nothing to load
  cache.export_block(1, store.slot(2));
  store.seal(2);
  EXPECT_TRUE(store.intact(2));
  cache.import_block(store.slot(2), 0);
  EXPECT_EQ(block_values(cache, 0), block_values(cache, 1));
  EXPECT_THROW(cache.import_block(store.slot(2), 3), std::out_of_range);
  EXPECT_THROW(store.slot(4), std::out_of_range);
}

TEST(KvTierStore, AFileBackedSlotChangedOnDiskIsRefused) {
  const auto folder =
      std::filesystem::temp_directory_path() / ("kv_tier_store_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  kv_cache cache(small_shape(2));
  fill(cache, 0, 1.f);
  std::string path;
  {
    kv_tier_store store(3, cache.shape().bytes_per_block(), folder.string());
    path = store.path();
    ASSERT_TRUE(std::filesystem::exists(path));
    EXPECT_EQ(std::filesystem::file_size(path), 3u * cache.shape().bytes_per_block());
    cache.export_block(0, store.slot(1));
    store.seal(1);
    cache.export_block(0, store.slot(2));
    store.seal(2);
    // One byte of slot 1 changes in the file, through a descriptor of its own.
    const int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const char bad = 0x5a;
    ASSERT_EQ(::pwrite(fd, &bad, 1, cache.shape().bytes_per_block() + 17), 1);
    ::close(fd);
    EXPECT_FALSE(store.intact(1));
    EXPECT_TRUE(store.intact(2));
  }
  EXPECT_FALSE(std::filesystem::exists(path));  // the store removes its file
  std::filesystem::remove_all(folder);
}

TEST(KvTierStore, AFolderThatCannotHoldTheFileIsAClearError) {
  try {
    kv_tier_store store(1, 64, "/nonexistent/folder");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-offload-dir: cannot make /nonexistent/folder/"),
              std::string::npos)
        << e.what();
  }
}

TEST(KvTierStore, TheHashSeesEveryByte) {
  std::vector<std::byte> bytes(1000, std::byte{7});
  const uint64_t h = hash_bytes(bytes);
  for (size_t i : {size_t{0}, size_t{31}, size_t{32}, size_t{995}, size_t{999}}) {
    bytes[i] = std::byte{8};
    EXPECT_NE(hash_bytes(bytes), h) << i;
    bytes[i] = std::byte{7};
  }
  EXPECT_EQ(hash_bytes(bytes), h);
}

}  // namespace
}  // namespace actorllm
