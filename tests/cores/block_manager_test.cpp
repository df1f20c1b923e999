#include "actors/scheduler/block_manager.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace actorllm {
namespace {

std::vector<int32_t> iota_tokens(int32_t n, int32_t first = 100) {
  std::vector<int32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

block_manager make(int32_t num_device, int32_t num_cpu = 0, bool caching = true) {
  return block_manager({/*block_size=*/4, num_device, num_cpu, caching});
}

TEST(BlockPool, FreeUsedCachedAlwaysSumToPoolSize) {
  block_pool pool(3);
  block_id a = pool.allocate();
  block_id b = pool.allocate();
  EXPECT_TRUE(pool.try_set_hash(a, 42));
  EXPECT_FALSE(pool.try_set_hash(b, 42));  // duplicate content stays uncached
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.num_cached(), 1);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.find(42), a);
  pool.check_invariants();
}

TEST(BlockPool, EvictsCachedBlocksOnlyWhenNoFreeBlockIsLeft) {
  block_pool pool(2);
  block_id a = pool.allocate();
  pool.try_set_hash(a, 7);
  pool.release(a);
  block_id b = pool.allocate();  // the free one, not the cached one
  EXPECT_NE(b, a);
  EXPECT_EQ(pool.find(7), a);
  block_id c = pool.allocate();  // now the cached one is evicted
  EXPECT_EQ(c, a);
  EXPECT_FALSE(pool.find(7).has_value());
  pool.check_invariants();
}

TEST(BlockManager, AllocateTakesOneBlockPerBlockSizeTokens) {
  block_manager m = make(8);
  std::vector<int32_t> tokens = iota_tokens(9);
  EXPECT_TRUE(m.can_allocate(tokens, 9));
  EXPECT_EQ(m.allocate(1, tokens, 9), 0);
  EXPECT_EQ(m.block_table(1).size(), 3u);  // ceil(9 / 4)
  EXPECT_EQ(m.num_slots(1), 9);
  EXPECT_EQ(m.stats().device.num_used, 3);
  EXPECT_EQ(m.stats().device.num_free, 5);
  EXPECT_DOUBLE_EQ(m.stats().device.utilization(), 3.0 / 8.0);
  m.check_invariants();
  m.free(1);
  EXPECT_FALSE(m.has_blocks(1));
  EXPECT_EQ(m.stats().device.num_used, 0);
  m.check_invariants();
}

TEST(BlockManager, CanAllocateSaysNoWhenThePoolIsShort) {
  block_manager m = make(2);
  std::vector<int32_t> tokens = iota_tokens(9);
  EXPECT_FALSE(m.can_allocate(tokens, 9));
  EXPECT_TRUE(m.can_allocate(tokens, 8));
}

TEST(BlockManager, AppendSlotTakesANewBlockOnlyAtABlockBoundary) {
  block_manager m = make(4);
  std::vector<int32_t> tokens = iota_tokens(6);
  m.allocate(1, tokens, 3);
  std::vector<block_copy> copies;
  EXPECT_TRUE(m.can_append(1, 4));
  m.append_slots(1, tokens, 4, copies);
  EXPECT_EQ(m.block_table(1).size(), 1u);
  m.append_slots(1, tokens, 5, copies);
  EXPECT_EQ(m.block_table(1).size(), 2u);
  EXPECT_TRUE(copies.empty());
  m.check_invariants();
}

TEST(BlockManager, CanAppendSaysNoWhenNoBlockIsLeft) {
  block_manager m = make(1);
  std::vector<int32_t> tokens = iota_tokens(5);
  m.allocate(1, tokens, 4);
  EXPECT_TRUE(m.can_append(1, 4));
  EXPECT_FALSE(m.can_append(1, 5));
}

TEST(BlockManager, ForkSharesBlocksAndCopiesTheLastOneOnWrite) {
  block_manager m = make(8);
  std::vector<int32_t> tokens = iota_tokens(6);
  m.allocate(1, tokens, 6);  // blocks: [full, half]
  m.fork(1, 2);
  std::vector<block_id> parent(m.block_table(1).begin(), m.block_table(1).end());
  EXPECT_EQ(m.device_pool().ref_count(parent[0]), 2);
  EXPECT_EQ(m.device_pool().ref_count(parent[1]), 2);

  std::vector<int32_t> child_tokens = tokens;
  child_tokens.push_back(7);
  std::vector<block_id> child_before(m.block_table(2).begin(), m.block_table(2).end());
  EXPECT_EQ(child_before, parent);
  std::vector<slot_request> both{{2, child_tokens, 7}, {1, child_tokens, 7}};
  EXPECT_EQ(m.num_blocks_needed(both), 1);  // one copy: the last writer keeps the original

  std::vector<block_copy> copies;
  EXPECT_EQ(m.append_slots(2, child_tokens, 7, copies), 1);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, parent[1]);
  EXPECT_EQ(m.block_table(2)[1], copies[0].dst);
  EXPECT_EQ(m.block_table(2)[0], parent[0]);  // the full block stays shared
  // The parent is the only holder of the original now: it writes in place.
  EXPECT_EQ(m.append_slots(1, child_tokens, 7, copies), 0);
  EXPECT_EQ(m.block_table(1)[1], parent[1]);
  m.check_invariants();
  m.free(1);
  m.free(2);
  EXPECT_EQ(m.stats().device.num_used, 0);
  m.check_invariants();
}

TEST(BlockManager, PrefixCacheReusesTheLongestCachedPrefix) {
  block_manager m = make(16);
  std::vector<int32_t> a = iota_tokens(10);  // 2 full blocks + 2 tokens
  m.allocate(1, a, 10);
  std::vector<block_id> a_blocks(m.block_table(1).begin(), m.block_table(1).end());

  std::vector<int32_t> b = iota_tokens(10);
  b[9] = 999;  // same first 2 blocks
  b.push_back(5);
  EXPECT_EQ(m.num_cached_tokens(b), 8);
  EXPECT_EQ(m.allocate(2, b, 11), 8);
  EXPECT_EQ(m.block_table(2)[0], a_blocks[0]);
  EXPECT_EQ(m.block_table(2)[1], a_blocks[1]);
  EXPECT_NE(m.block_table(2)[2], a_blocks[2]);
  EXPECT_EQ(m.stats().prefix_cache_queries, 21);
  EXPECT_EQ(m.stats().prefix_cache_hits, 8);

  std::vector<int32_t> c = iota_tokens(10);
  c[4] = 999;  // differs in the second block: only the first one hits
  EXPECT_EQ(m.num_cached_tokens(c), 4);
  m.check_invariants();
}

TEST(BlockManager, TheLastTokenIsAlwaysComputed) {
  block_manager m = make(8);
  std::vector<int32_t> a = iota_tokens(8);  // exactly 2 blocks
  m.allocate(1, a, 8);
  EXPECT_EQ(m.num_cached_tokens(a), 4);  // not 8: the last token's logits are needed
  EXPECT_EQ(m.allocate(2, a, 8), 4);
  m.check_invariants();
}

TEST(BlockManager, FreedCachedBlocksStayHitableUntilEvictedTailFirst) {
  block_manager m = make(3);
  std::vector<int32_t> a = iota_tokens(12);
  m.allocate(1, a, 12);
  std::vector<block_id> a_blocks(m.block_table(1).begin(), m.block_table(1).end());
  m.free(1);
  EXPECT_EQ(m.stats().device.num_cached, 3);
  EXPECT_EQ(m.stats().device.num_free, 0);
  // Freed tail first: the sequence's last block is the first to go.
  std::vector<block_id> order = m.device_pool().eviction_order();
  EXPECT_EQ(order, (std::vector<block_id>{a_blocks[2], a_blocks[1], a_blocks[0]}));

  std::vector<int32_t> other = iota_tokens(4, 5000);
  m.allocate(2, other, 4);  // evicts a's last block only
  EXPECT_EQ(m.block_table(2)[0], a_blocks[2]);
  EXPECT_EQ(m.num_cached_tokens(a), 8);
  m.check_invariants();
}

TEST(BlockManager, AHitTakesTheBlockOutOfTheEvictionOrder) {
  block_manager m = make(4);
  std::vector<int32_t> a = iota_tokens(9);
  m.allocate(1, a, 9);
  std::vector<block_id> a_blocks(m.block_table(1).begin(), m.block_table(1).end());
  m.free(1);
  EXPECT_EQ(m.stats().device.num_cached, 2);
  EXPECT_TRUE(m.can_allocate(a, 9));
  EXPECT_EQ(m.allocate(2, a, 9), 8);
  EXPECT_EQ(m.stats().device.num_cached, 0);
  EXPECT_EQ(m.device_pool().ref_count(a_blocks[0]), 1);
  m.check_invariants();
}

TEST(BlockManager, HitsOnUnreferencedBlocksCountAgainstCapacity) {
  block_manager m = make(3);
  std::vector<int32_t> a = iota_tokens(12);
  m.allocate(1, a, 12);
  m.free(1);  // 3 cached blocks, 0 free
  std::vector<int32_t> b = iota_tokens(12);
  b[11] = 1;
  // 2 hits + 1 fresh (which evicts a's last block): exactly 3.
  EXPECT_EQ(m.num_blocks_needed(std::vector<slot_request>{{2, b, 12}}), 3);
  EXPECT_TRUE(m.can_allocate(b, 12));
  EXPECT_EQ(m.allocate(2, b, 12), 8);
  m.check_invariants();
}

TEST(BlockManager, DuplicateBlocksStayUncached) {
  block_manager m = make(8);
  std::vector<int32_t> a = iota_tokens(5);
  // Both start before either block is full, so both compute the same first block.
  m.allocate(1, a, 3);
  m.allocate(2, a, 3);
  std::vector<block_copy> copies;
  m.append_slots(1, a, 5, copies);
  m.append_slots(2, a, 5, copies);
  block_id first = m.block_table(1)[0];
  EXPECT_TRUE(m.device_pool().hash_of(first).has_value());
  EXPECT_FALSE(m.device_pool().hash_of(m.block_table(2)[0]).has_value());
  m.free(1);
  m.free(2);
  EXPECT_EQ(m.stats().device.num_cached, 1);
  EXPECT_EQ(m.stats().device.num_free, 7);
  EXPECT_EQ(m.num_cached_tokens(a), 4);
  m.check_invariants();
}

TEST(BlockManager, WithoutPrefixCachingNothingIsShared) {
  block_manager m = make(8, 0, false);
  std::vector<int32_t> a = iota_tokens(9);
  m.allocate(1, a, 9);
  m.free(1);
  EXPECT_EQ(m.num_cached_tokens(a), 0);
  EXPECT_EQ(m.allocate(2, a, 9), 0);
  EXPECT_EQ(m.stats().device.num_cached, 0);
  EXPECT_EQ(m.stats().prefix_cache_queries, 0);
  m.check_invariants();
}

TEST(BlockManager, SwapOutAndInMoveAWholeGroup) {
  block_manager m = make(8, 8, false);
  std::vector<int32_t> tokens = iota_tokens(6);
  m.allocate(1, tokens, 6);
  m.fork(1, 2);  // 2 shared blocks
  std::vector<block_id> device_before(m.block_table(1).begin(), m.block_table(1).end());
  std::vector<seq_id> group{1, 2};
  ASSERT_TRUE(m.can_swap_out(group));
  std::vector<block_copy> out = m.swap_out(group);
  ASSERT_EQ(out.size(), 2u);  // shared blocks move once
  EXPECT_TRUE(m.is_swapped(1));
  EXPECT_EQ(m.stats().device.num_used, 0);
  EXPECT_EQ(m.stats().cpu.num_used, 2);
  EXPECT_EQ(m.cpu_pool().ref_count(m.block_table(1)[0]), 2);
  for (const block_copy& c : out) {
    EXPECT_NE(std::find(device_before.begin(), device_before.end(), c.src), device_before.end());
  }
  m.check_invariants();

  ASSERT_TRUE(m.can_swap_in(group));
  std::vector<block_copy> in = m.swap_in(group);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_FALSE(m.is_swapped(2));
  EXPECT_EQ(m.stats().cpu.num_used, 0);
  EXPECT_EQ(m.device_pool().ref_count(m.block_table(2)[1]), 2);
  EXPECT_EQ(m.block_table(1)[0], m.block_table(2)[0]);
  m.check_invariants();
  m.free(1);
  m.free(2);
  m.check_invariants();
}

TEST(BlockManager, SwapOutNeedsRoomInTheCpuPool) {
  block_manager m = make(8, 1);
  std::vector<int32_t> tokens = iota_tokens(6);
  m.allocate(1, tokens, 6);
  std::vector<seq_id> group{1};
  EXPECT_FALSE(m.can_swap_out(group));
}

TEST(BlockManager, SwapInReusesABlockStillCachedOnTheDevice) {
  block_manager m = make(8, 8);
  std::vector<int32_t> tokens = iota_tokens(6);
  m.allocate(1, tokens, 6);
  block_id full = m.block_table(1)[0];
  std::vector<seq_id> group{1};
  m.swap_out(group);
  EXPECT_EQ(m.stats().device.num_cached, 1);  // the full block stays hit-able
  std::vector<block_copy> in = m.swap_in(group);
  EXPECT_EQ(in.size(), 1u);  // only the partial block is copied back
  EXPECT_EQ(m.block_table(1)[0], full);
  m.check_invariants();
}

TEST(BlockManager, SwapInKeepsRoomWhenAsked) {
  block_manager m = make(2, 4, false);
  std::vector<int32_t> tokens = iota_tokens(8);
  m.allocate(1, tokens, 8);
  std::vector<seq_id> group{1};
  m.swap_out(group);
  EXPECT_TRUE(m.can_swap_in(group));
  EXPECT_FALSE(m.can_swap_in(group, 1));
}

TEST(BlockManager, AWindowedModelHoldsOnlyTheBlocksItsWindowSees) {
  // Blocks of 4, a window of 6: the next query at position p sees p - 5 .. p, and one token
  // more is kept for a step planned ahead; blocks wholly before that go back to the pool.
  block_manager windowed({/*block_size=*/4, 32, 0, false, /*sliding_window=*/6});
  block_manager full({/*block_size=*/4, 32, 0, false});
  const std::vector<int32_t> tokens = iota_tokens(64);
  windowed.allocate(1, tokens, 10);
  full.allocate(1, tokens, 10);
  std::vector<block_copy> copies;
  int32_t most_held = 0;
  for (int32_t n = 11; n <= 64; ++n) {
    windowed.append_slots(1, tokens, n, copies);
    full.append_slots(1, tokens, n, copies);
    windowed.check_invariants();
    most_held = std::max(most_held, windowed.stats().device.num_used);
    // Every block from the one holding position (n - 1) - 6 on is still there.
    const auto table = windowed.block_table(1);
    ASSERT_EQ(static_cast<int32_t>(table.size()), (n + 3) / 4);
    for (int32_t b = std::max(0, n - 1 - 6) / 4; b < static_cast<int32_t>(table.size()); ++b)
      EXPECT_NE(table[b], no_block) << "n " << n << " block " << b;
  }
  EXPECT_EQ(full.stats().device.num_used, 16);
  EXPECT_LE(most_held, 4);  // ceil((6 + 1) / 4) + 1 blocks at most
  EXPECT_EQ(windowed.block_table(1)[0], no_block);
  windowed.free(1);
  EXPECT_EQ(windowed.stats().device.num_used, 0);
  windowed.check_invariants();
}

TEST(BlockManager, ReleasedWindowEntriesSurviveForkAndSwap) {
  block_manager m({/*block_size=*/4, 16, 16, false, /*sliding_window=*/4});
  const std::vector<int32_t> tokens = iota_tokens(24);
  std::vector<block_copy> copies;
  m.allocate(1, tokens, 8);
  m.append_slots(1, tokens, 20, copies);  // blocks 0..2 fall behind the window
  EXPECT_EQ(m.block_table(1)[0], no_block);
  m.fork(1, 2);
  const std::vector<seq_id> group{1, 2};
  const auto out = m.swap_out(group);
  EXPECT_EQ(static_cast<int32_t>(out.size()), m.stats().cpu.num_used);  // live blocks only
  EXPECT_EQ(m.block_table(2)[0], no_block);
  m.check_invariants();
  m.swap_in(group);
  EXPECT_EQ(m.block_table(1)[0], no_block);
  m.check_invariants();
  m.free(1);
  m.free(2);
  EXPECT_EQ(m.stats().device.num_used, 0);
  EXPECT_EQ(m.stats().cpu.num_used, 0);
}

}  // namespace
}  // namespace actorllm
