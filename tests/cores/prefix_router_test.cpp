// Cache-aware routing's core: a prompt's block hashes are those a replica's block manager
// reports in its KV events; the index follows stores, evictions and a replica's loss; and the
// policies choose as they state (the longest cached prefix within the balance margin, least
// load, round robin).
#include "actors/request_router/prefix_router.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "actors/scheduler/block_manager.hpp"

namespace actorllm {
namespace {

std::vector<int32_t> tokens(int n, int stride) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(1 + (i * stride) % 400);
  return t;
}

TEST(prefix_router, prompt_hashes_are_the_block_managers_kv_events) {
  block_manager blocks({4, 32, 0, true, 0});
  blocks.record_cache_events();
  const auto prompt = tokens(14, 7);  // 3 full blocks of 4, and 2 tokens
  for (uint64_t salt : {0u, 3u}) {
    const seq_id seq = salt;
    blocks.allocate(seq, prompt, static_cast<int32_t>(prompt.size()), salt);
    auto events = blocks.take_cache_events();
    auto want = prompt_block_hashes(prompt, 4, salt);
    ASSERT_EQ(want.size(), 3u);
    std::sort(events.stored.begin(), events.stored.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(events.stored, want) << "salt " << salt;
    EXPECT_TRUE(events.evicted.empty());
  }
  // An adapter's salt keys a different chain.
  EXPECT_NE(prompt_block_hashes(prompt, 4, 0), prompt_block_hashes(prompt, 4, 3));
}

TEST(prefix_router, evicted_blocks_leave_the_events_net_of_the_period) {
  block_manager blocks({4, 4, 0, true, 0});  // room for one prompt of 4 blocks
  blocks.record_cache_events();
  const auto a = tokens(16, 3), b = tokens(16, 11);
  blocks.allocate(1, a, 16);
  blocks.free(1);  // cached, evictable
  const auto first = blocks.take_cache_events();
  EXPECT_EQ(first.stored.size(), 4u);
  blocks.allocate(2, b, 16);  // evicts a's blocks
  const auto second = blocks.take_cache_events();
  EXPECT_EQ(second.evicted.size(), 4u);
  EXPECT_EQ(second.stored.size(), 4u);
  prefix_index index;
  index.apply(0, first);
  EXPECT_EQ(index.num_cached_blocks(0, prompt_block_hashes(a, 4, 0)), 4);
  index.apply(0, second);
  EXPECT_EQ(index.num_cached_blocks(0, prompt_block_hashes(a, 4, 0)), 0);
  EXPECT_EQ(index.num_cached_blocks(0, prompt_block_hashes(b, 4, 0)), 4);
  index.forget(0);
  EXPECT_EQ(index.num_cached_blocks(0, prompt_block_hashes(b, 4, 0)), 0);
}

TEST(prefix_router, policies_choose_as_stated) {
  replica_set replicas;
  for (int i = 0; i < 3; ++i) replicas.add();
  prefix_index index;
  const auto prompt = tokens(40, 5);
  const auto hashes = prompt_block_hashes(prompt, 8, 0);  // 5 blocks
  index.apply(1, {{hashes[0], hashes[1]}, {}});
  index.apply(2, {{hashes[0], hashes[1], hashes[2], hashes[3]}, {}});
  routing_options o;
  o.block_size = 8;
  o.balance_tokens = 1000;
  uint64_t turn = 0;
  auto chosen = choose_replica(replicas, index, hashes, o, turn);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->replica, 2);  // the longest prefix
  EXPECT_EQ(chosen->reason, route_reason::cache_hit);
  EXPECT_EQ(chosen->num_cached_blocks, 4);
  replicas.charge(2, 1001);  // beyond the margin: least load instead
  chosen = choose_replica(replicas, index, hashes, o, turn);
  EXPECT_EQ(chosen->replica, 0);
  EXPECT_EQ(chosen->reason, route_reason::balance);
  replicas.charge(0, 600);  // within the margin of the least loaded (replica 1, at 0)
  replicas.release(2, 600);
  chosen = choose_replica(replicas, index, hashes, o, turn);
  EXPECT_EQ(chosen->replica, 2);
  EXPECT_EQ(chosen->reason, route_reason::cache_hit);
  // No prefix anywhere: least load.
  chosen = choose_replica(replicas, index, prompt_block_hashes(tokens(40, 9), 8, 0), o, turn);
  EXPECT_EQ(chosen->replica, 1);
  EXPECT_EQ(chosen->reason, route_reason::least_load);
  // A dead replica is never chosen, its prefix notwithstanding.
  replicas.mark_dead(2);
  index.forget(2);
  chosen = choose_replica(replicas, index, hashes, o, turn);
  EXPECT_EQ(chosen->replica, 1);
  EXPECT_EQ(chosen->reason, route_reason::cache_hit);

  o.policy = routing_policy::least_load;
  EXPECT_EQ(choose_replica(replicas, index, hashes, o, turn)->replica, 1);
  o.policy = routing_policy::round_robin;
  std::vector<int32_t> order;
  for (int i = 0; i < 4; ++i)
    order.push_back(choose_replica(replicas, index, hashes, o, turn)->replica);
  EXPECT_EQ(order, (std::vector<int32_t>{0, 1, 0, 1}));
  replica_set none;
  EXPECT_FALSE(choose_replica(none, index, hashes, o, turn));
}

TEST(prefix_router, sessions_remember_their_replica_most_recent_first) {
  session_table sessions(2);
  sessions.remember("a", 0);
  sessions.remember("b", 1);
  EXPECT_EQ(sessions.find("a"), 0);
  sessions.remember("a", 1);  // moved, and now the most recent
  sessions.remember("c", 0);  // past the capacity: b, the least recent, goes
  EXPECT_EQ(sessions.find("a"), 1);
  EXPECT_FALSE(sessions.find("b"));
  EXPECT_EQ(sessions.find("c"), 0);
  sessions.forget_replica(0);
  EXPECT_FALSE(sessions.find("c"));
  EXPECT_EQ(sessions.find("a"), 1);
  EXPECT_EQ(sessions.size(), 1u);
}

}  // namespace
}  // namespace actorllm
