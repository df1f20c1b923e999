// The router's choice of replica: the usable one owing the fewest tokens, the lowest index on
// a tie; draining and dead replicas get nothing new; a replica added later is picked at once.
#include "actors/request_router/replica_set.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace actorllm {
namespace {

replica_set with(int32_t count) {
  replica_set s;
  for (int32_t i = 0; i < count; ++i) s.add();
  return s;
}

TEST(replica_set, an_empty_set_has_nothing_to_pick) {
  replica_set s;
  EXPECT_EQ(s.size(), 0);
  EXPECT_EQ(s.num_usable(), 0);
  EXPECT_FALSE(s.pick());
}

TEST(replica_set, add_returns_consecutive_indices) {
  replica_set s;
  EXPECT_EQ(s.add(), 0);
  EXPECT_EQ(s.add(), 1);
  EXPECT_EQ(s.add(), 2);
  EXPECT_EQ(s.size(), 3);
  EXPECT_EQ(s.num_usable(), 3);
  EXPECT_EQ(s.outstanding(2), 0);
}

TEST(replica_set, picks_the_replica_owing_the_fewest_tokens) {
  auto s = with(3);
  s.charge(0, 500);
  s.charge(1, 120);
  s.charge(2, 300);
  EXPECT_EQ(s.pick(), 1);
  s.charge(1, 200);  // 320 now, above replica 2's 300
  EXPECT_EQ(s.pick(), 2);
}

TEST(replica_set, a_tie_goes_to_the_lowest_index) {
  auto s = with(3);
  EXPECT_EQ(s.pick(), 0);
  s.charge(0, 50);
  s.charge(1, 40);
  s.charge(2, 40);
  EXPECT_EQ(s.pick(), 1);
}

TEST(replica_set, equal_requests_go_round_the_replicas) {
  auto s = with(3);
  std::vector<int32_t> picked;
  for (int i = 0; i < 7; ++i) {
    const auto r = s.pick();
    ASSERT_TRUE(r);
    picked.push_back(*r);
    s.charge(*r, 100);
  }
  EXPECT_EQ(picked, (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(s.outstanding(0), 300);
  EXPECT_EQ(s.outstanding(1), 200);
  EXPECT_EQ(s.outstanding(2), 200);
}

TEST(replica_set, release_lowers_the_debt_and_never_below_zero) {
  auto s = with(2);
  s.charge(0, 100);
  s.charge(1, 60);
  s.release(0, 70);  // 30 left: now the lighter one
  EXPECT_EQ(s.outstanding(0), 30);
  EXPECT_EQ(s.pick(), 0);
  s.release(0, 1000);
  EXPECT_EQ(s.outstanding(0), 0);
}

TEST(replica_set, a_draining_replica_gets_nothing_new_but_is_still_released) {
  auto s = with(2);
  s.charge(1, 1000);
  EXPECT_TRUE(s.drain(0));
  EXPECT_EQ(s.num_usable(), 1);
  EXPECT_EQ(s.pick(), 1);  // the idle replica drains, so the busy one gets the work
  s.release(1, 1000);
  EXPECT_EQ(s.outstanding(1), 0);
  EXPECT_EQ(s.pick(), 1);
  EXPECT_TRUE(s.drain(1));
  EXPECT_FALSE(s.pick());
  EXPECT_EQ(s.size(), 2);  // draining replicas keep their index
}

TEST(replica_set, a_dead_replica_is_never_picked_and_cannot_drain) {
  auto s = with(3);
  s.charge(1, 10);
  s.charge(2, 20);
  s.mark_dead(0);
  EXPECT_EQ(s.num_usable(), 2);
  EXPECT_EQ(s.pick(), 1);
  EXPECT_FALSE(s.drain(0));
  s.mark_dead(1);
  s.mark_dead(2);
  EXPECT_EQ(s.num_usable(), 0);
  EXPECT_FALSE(s.pick());
}

TEST(replica_set, indices_out_of_range_are_refused_or_ignored) {
  auto s = with(2);
  EXPECT_FALSE(s.drain(-1));
  EXPECT_FALSE(s.drain(2));
  s.mark_dead(-1);
  s.mark_dead(2);
  EXPECT_EQ(s.num_usable(), 2);
  EXPECT_EQ(s.pick(), 0);
}

TEST(replica_set, a_replica_added_at_run_time_takes_the_next_request) {
  auto s = with(2);
  s.charge(0, 80);
  s.charge(1, 90);
  s.mark_dead(0);
  EXPECT_EQ(s.pick(), 1);
  const int32_t fresh = s.add();
  EXPECT_EQ(fresh, 2);
  EXPECT_EQ(s.num_usable(), 2);
  EXPECT_EQ(s.pick(), 2);
}

TEST(replica_set, a_reserved_replica_gets_nothing_until_it_serves) {
  auto s = with(1);
  s.charge(0, 1000);
  const int32_t fresh = s.reserve();
  EXPECT_EQ(s.state(fresh), replica_state::starting);
  EXPECT_EQ(s.pick(), 0) << "a starting replica takes no request, however idle";
  EXPECT_FALSE(s.drain(fresh)) << "only a serving replica drains";
  EXPECT_TRUE(s.start_serving(fresh));
  EXPECT_FALSE(s.start_serving(fresh));
  EXPECT_EQ(s.pick(), fresh);
  EXPECT_STREQ(to_string(s.state(fresh)), "serving");
}

TEST(replica_set, a_draining_replica_is_drained_once_its_last_request_leaves) {
  auto s = with(2);
  s.charge(0, 50);
  s.charge(0, 70);
  EXPECT_FALSE(s.take_drained(0)) << "serving, not draining";
  ASSERT_TRUE(s.drain(0));
  EXPECT_EQ(s.state(0), replica_state::draining);
  EXPECT_EQ(s.num_requests(0), 2);
  EXPECT_FALSE(s.take_drained(0));
  s.release(0, 50);
  EXPECT_FALSE(s.take_drained(0)) << "one request left";
  s.release(0, 70);
  EXPECT_TRUE(s.take_drained(0));
  EXPECT_FALSE(s.take_drained(0)) << "reported once";
  EXPECT_FALSE(s.take_drained(1));
  EXPECT_FALSE(s.take_drained(7));
  s.mark_dead(0);
  EXPECT_FALSE(s.drain(0)) << "a dead replica does not drain";
}

}  // namespace
}  // namespace actorllm
