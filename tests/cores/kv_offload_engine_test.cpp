// The second KV tier with the real stories260K model: prompts whose prefixes no longer fit the
// device pool come back from the tier instead of being computed again, with exactly the tokens
// each request gets alone; and a tier block whose bytes changed on disk (fault injection through
// the tier's file) is computed again, not used.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "actors/offline_engine/llm_engine.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::ids_request;

/// Six prompts of 48 tokens with nothing in common, 8 tokens each.
std::vector<generate_request> distinct_prompts(const std::string& prefix) {
  std::vector<generate_request> out;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> ids{1};
    for (int j = 1; j < 48; ++j) ids.push_back(3 + (i * 53 + j * 7 + j * j) % 480);
    out.push_back(ids_request(prefix + std::to_string(i), ids, 8));
  }
  return out;
}

/// 16 device blocks of 8 tokens: room for two of the prompts, so each evicts an earlier one.
engine_config small_pool(int64_t tier_bytes, std::string folder = {}) {
  engine_config c = testing::stories_config(16, 0);
  c.cache.block_size = 8;
  c.model.max_model_len = 128;
  c.cache.kv_offload_bytes = tier_bytes;
  c.cache.kv_offload_dir = std::move(folder);
  return c;
}

/// Runs each request alone, in order, and checks its tokens.
void run_each(llm_engine& engine, const std::vector<generate_request>& requests,
              const std::vector<std::vector<int32_t>>& alone, const char* round) {
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(run_to_completion(engine, {requests[i]})[0][0].token_ids, alone[i])
        << round << " request " << i;
}

TEST(kv_offload_engine, prefixes_beyond_the_device_pool_come_back_from_the_tier_exactly) {
  const auto first = distinct_prompts("a");
  const auto alone = testing::solo_tokens(testing::stories_config(256, 0), first);

  llm_engine without(engine_setup::load(small_pool(0)));
  run_each(without, first, alone, "no tier, first");
  run_each(without, distinct_prompts("b"), alone, "no tier, again");
  EXPECT_EQ(without.stats().prefix_cache_hits, 0);  // every prefix was evicted before its turn

  llm_engine engine(engine_setup::load(small_pool(4 << 20)));
  run_each(engine, first, alone, "first");
  EXPECT_GT(engine.stats().tier.num_stored, 0);
  EXPECT_EQ(engine.stats().tier_cache_hits, 0);
  run_each(engine, distinct_prompts("b"), alone, "again");
  const scheduler_stats stats = engine.stats();
  EXPECT_EQ(stats.tier_cache_hits, 6 * 40);  // five full blocks of each prompt's first 47 tokens
  EXPECT_EQ(stats.tier.num_loaded, 6 * 5);
  EXPECT_EQ(stats.tier.num_failed, 0);
  EXPECT_EQ(stats.device.num_used, 0);
}

TEST(kv_offload_engine, a_tier_block_changed_on_disk_is_computed_again) {
  const auto folder = std::filesystem::temp_directory_path() /
                      ("kv_offload_engine_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(folder);
  const auto first = distinct_prompts("a");
  const auto alone = testing::solo_tokens(testing::stories_config(256, 0), first);
  {
    llm_engine engine(engine_setup::load(small_pool(4 << 20, folder.string())));
    run_each(engine, first, alone, "first");
    ASSERT_GT(engine.stats().tier.num_stored, 0);

    // Every byte of the tier's file is overwritten behind the engine's back.
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
      files.push_back(entry.path());
    ASSERT_EQ(files.size(), 1u);
    const auto size = std::filesystem::file_size(files[0]);
    const std::vector<char> junk(size, 0x5a);
    const int fd = ::open(files[0].c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(size));
    ::close(fd);

    run_each(engine, distinct_prompts("b"), alone, "after the fault");
    const scheduler_stats stats = engine.stats();
    // Loads from slots stored before the fault fail; those stored after it succeed.
    EXPECT_GT(stats.tier.num_failed, 0);
    EXPECT_EQ(stats.device.num_used, 0);
  }
  EXPECT_TRUE(std::filesystem::is_empty(folder));  // the tier's file goes with the engine
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace actorllm
