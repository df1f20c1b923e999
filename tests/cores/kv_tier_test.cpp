// The second KV tier's index (kv_tier) and the block manager that feeds it: prefix blocks the
// device pool evicts are stored, later hits past the device prefix load them back, slots a plan
// loads from are never overwritten by the same plan, and a slot that fails its check is gone.
#include "actors/scheduler/kv_tier.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "actors/scheduler/block_manager.hpp"

namespace actorllm {
namespace {

TEST(KvTier, StoresUntilFullThenEvictsTheLeastRecentlyUsed) {
  kv_tier tier(2);
  EXPECT_EQ(tier.store(10), 0);
  EXPECT_EQ(tier.store(20), 1);
  EXPECT_EQ(tier.store(10), std::nullopt);  // held already: made most recently used
  EXPECT_EQ(tier.lru_order(), (std::vector<uint64_t>{20, 10}));
  EXPECT_EQ(tier.store(30), 1);  // 20's slot
  EXPECT_FALSE(tier.contains(20));
  EXPECT_TRUE(tier.contains(10) && tier.contains(30));
  const kv_tier_stats stats = tier.stats();
  EXPECT_EQ(stats.num_stored, 3);
  EXPECT_EQ(stats.num_evicted, 1);
  EXPECT_EQ(stats.num_used, 2);
  tier.check_invariants();
}

TEST(KvTier, APinnedSlotIsNotOverwrittenUntilThePlanEnds) {
  kv_tier tier(1);
  ASSERT_EQ(tier.store(10), 0);
  EXPECT_EQ(tier.load(10), 0);
  EXPECT_EQ(tier.store(20), std::nullopt);  // the only slot is being loaded from
  tier.check_invariants();
  tier.unpin_all();
  EXPECT_EQ(tier.store(20), 0);
  EXPECT_EQ(tier.load(10), std::nullopt);
  tier.check_invariants();
}

TEST(KvTier, ASlotThatFailsItsCheckIsDropped) {
  kv_tier tier(2);
  ASSERT_EQ(tier.store(10), 0);
  ASSERT_EQ(tier.load(10), 0);
  tier.load_failed(0);
  EXPECT_FALSE(tier.contains(10));
  tier.unpin_all();
  tier.check_invariants();
  EXPECT_EQ(tier.stats().num_failed, 1);
  EXPECT_EQ(tier.stats().num_used, 0);
}

std::vector<int32_t> tokens_from(int32_t first, int32_t n) {
  std::vector<int32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

TEST(BlockManagerTier, EvictedPrefixBlocksAreStoredAndLoadedBackOnAHit) {
  // Block size 4, 3 device blocks, 8 tier slots.
  block_manager blocks({4, 3, 0, true, 0, 8});
  const auto a = tokens_from(100, 9);  // two full blocks and one token
  EXPECT_EQ(blocks.allocate(1, a, 9), 0);
  EXPECT_TRUE(blocks.take_tier_moves().stores.empty());
  blocks.free(1);  // a's two full blocks stay cached on the device

  const auto b = tokens_from(500, 9);
  EXPECT_EQ(blocks.allocate(2, b, 9), 0);  // takes the free block, then evicts both of a's
  const tier_moves evicting = blocks.take_tier_moves();
  ASSERT_EQ(evicting.stores.size(), 2u);
  EXPECT_TRUE(evicting.loads.empty());
  EXPECT_EQ(blocks.num_cached_tokens(a), 8);  // from the tier now
  blocks.free(2);

  // a again: both full blocks come from the tier into fresh device blocks, so the sequence
  // computes only its last token.
  EXPECT_EQ(blocks.allocate(3, a, 9), 8);
  const tier_moves loading = blocks.take_tier_moves();
  ASSERT_EQ(loading.loads.size(), 2u);
  // From the slots a's blocks went to (the tail block was evicted first).
  EXPECT_EQ(loading.loads[0].src, evicting.stores[1].dst);
  EXPECT_EQ(loading.loads[1].src, evicting.stores[0].dst);
  EXPECT_EQ(loading.loads[0].dst, blocks.block_table(3)[0]);
  EXPECT_EQ(loading.loads[1].dst, blocks.block_table(3)[1]);
  // b's two blocks were evicted for them: stored in the same plan, into other slots.
  ASSERT_EQ(loading.stores.size(), 2u);
  for (const auto& store : loading.stores)
    for (const auto& load : loading.loads) EXPECT_NE(store.dst, load.src);
  const block_manager_stats stats = blocks.stats();
  EXPECT_EQ(stats.tier_cache_hits, 8);
  EXPECT_EQ(stats.prefix_cache_hits, 0);
  EXPECT_EQ(stats.tier.num_loaded, 2);
  EXPECT_EQ(stats.tier.num_stored, 4);
  blocks.check_invariants();
}

TEST(BlockManagerTier, ADevicePrefixIsFollowedByTheTiersBlocks) {
  block_manager blocks({4, 4, 0, true, 0, 8});
  const auto a = tokens_from(100, 13);  // three full blocks
  blocks.allocate(1, a, 13);
  blocks.free(1);  // cached, tail first: block 2 is evicted first, then 1, then 0
  const auto b = tokens_from(500, 5);
  blocks.allocate(2, b, 5);  // the free block and a's last full block
  const tier_moves stored = blocks.take_tier_moves();
  ASSERT_EQ(stored.stores.size(), 1u);
  EXPECT_EQ(blocks.num_cached_tokens(a), 12);  // two on the device, the third in the tier
  blocks.free(2);
  EXPECT_EQ(blocks.allocate(3, a, 13), 12);
  const tier_moves moves = blocks.take_tier_moves();
  ASSERT_EQ(moves.loads.size(), 1u);
  EXPECT_EQ(moves.loads[0].dst, blocks.block_table(3)[2]);
  const block_manager_stats stats = blocks.stats();
  EXPECT_EQ(stats.prefix_cache_hits, 8);
  EXPECT_EQ(stats.tier_cache_hits, 4);
  blocks.check_invariants();
}

TEST(BlockManagerTier, AFailedLoadLeavesTheTierAndIsNotHitAgain) {
  block_manager blocks({4, 2, 0, true, 0, 8});
  const auto a = tokens_from(100, 5);
  blocks.allocate(1, a, 5);
  blocks.free(1);
  blocks.allocate(2, tokens_from(500, 5), 5);  // evicts a's block into the tier
  blocks.take_tier_moves();
  blocks.free(2);
  ASSERT_EQ(blocks.allocate(3, a, 5), 4);
  const tier_moves moves = blocks.take_tier_moves();
  ASSERT_EQ(moves.loads.size(), 1u);
  blocks.tier_load_failed(moves.loads[0].src);
  blocks.free(3);
  // The recomputed block is on the device again; the tier no longer holds the hash.
  EXPECT_EQ(blocks.stats().tier.num_failed, 1);
  EXPECT_EQ(blocks.num_cached_tokens(a), 4);
  EXPECT_EQ(blocks.stats().tier.num_used, 1);  // only b's block, evicted for a
  blocks.check_invariants();
}

TEST(BlockManagerTier, KvEventsEvictAPrefixOnlyOnceItLeavesTheTierToo) {
  block_manager blocks({4, 2, 0, true, 0, 1});
  blocks.record_cache_events();
  const auto a = tokens_from(100, 5);
  blocks.allocate(1, a, 5);
  blocks.free(1);
  const kv_cache_events stored = blocks.take_cache_events();
  ASSERT_EQ(stored.stored.size(), 1u);
  const uint64_t a_hash = stored.stored[0];
  blocks.allocate(2, tokens_from(500, 5), 5);  // evicts a's block from the device
  blocks.take_tier_moves();                    // into the tier
  const kv_cache_events moved = blocks.take_cache_events();
  EXPECT_TRUE(moved.evicted.empty());  // still a hit here
  blocks.free(2);
  blocks.allocate(3, tokens_from(900, 5), 5);  // evicts b's block: the tier's one slot goes
  blocks.take_tier_moves();
  const kv_cache_events gone = blocks.take_cache_events();
  EXPECT_EQ(gone.evicted, std::vector<uint64_t>{a_hash});
}

TEST(BlockManagerTier, WithoutATierNothingIsStored) {
  block_manager blocks({4, 2, 0, true, 0, 0});
  blocks.allocate(1, tokens_from(100, 5), 5);
  blocks.free(1);
  blocks.allocate(2, tokens_from(500, 5), 5);  // evicts the cached block
  const tier_moves moves = blocks.take_tier_moves();
  EXPECT_TRUE(moves.stores.empty() && moves.loads.empty());
}

}  // namespace
}  // namespace actorllm
