// The autoscaling policy against a hand-made timeline: MIN is restored at once; sustained
// high load adds one replica per window and cool-down, up to MAX; sustained low load drains
// the emptiest local replica, down to MIN; a blip shorter than its window changes nothing;
// remote replicas count toward MAX and are never drained.
#include "actors/system/autoscaler.hpp"

#include <gtest/gtest.h>

namespace actorllm {
namespace {

using action = scale_decision::action;

autoscale_config policy(int32_t lo, int32_t hi) {
  autoscale_config c;
  c.min_replicas = lo;
  c.max_replicas = hi;
  c.up_window_s = 2;
  c.down_window_s = 4;
  c.cooldown_s = 3;
  c.waiting_per_replica = 1;
  c.kv_usage_high = 0.9;
  c.kv_usage_low = 0.3;
  return c;
}

replica_view replica(int32_t id, std::string state, int32_t waiting = 0, double kv = 0.0,
                     int32_t running = 0, std::string device = "cpu") {
  replica_view r;
  r.id = id;
  r.device = std::move(device);
  r.workers = 1;
  r.state = std::move(state);
  r.num_waiting = waiting;
  r.num_running = running;
  r.kv_cache_usage = kv;
  return r;
}

TEST(autoscaler, below_min_adds_at_once) {
  autoscaler a(policy(2, 4));
  const auto d = a.observe(0, {replica(0, "serving")});
  EXPECT_EQ(d.what, action::add);
  EXPECT_EQ(d.reason_kind, "below_min");
  // A starting replica counts: no second add for the same gap.
  EXPECT_EQ(a.observe(0.5, {replica(0, "serving"), replica(1, "starting")}).what, action::none);
}

TEST(autoscaler, a_queue_that_stays_long_adds_after_the_window) {
  autoscaler a(policy(1, 3));
  const std::vector<replica_view> busy{replica(0, "serving", 5, 0.5, 8)};
  EXPECT_EQ(a.observe(0, busy).what, action::none);
  EXPECT_EQ(a.observe(1.9, busy).what, action::none);
  const auto d = a.observe(2.0, busy);
  EXPECT_EQ(d.what, action::add);
  EXPECT_EQ(d.reason_kind, "queue");
  EXPECT_NE(d.reason.find("5 requests waiting"), std::string::npos) << d.reason;
}

TEST(autoscaler, a_blip_shorter_than_the_window_changes_nothing) {
  autoscaler a(policy(1, 3));
  EXPECT_EQ(a.observe(0, {replica(0, "serving", 5)}).what, action::none);
  EXPECT_EQ(a.observe(1, {replica(0, "serving", 0, 0.5)}).what, action::none);  // neither
  EXPECT_EQ(a.observe(2.5, {replica(0, "serving", 5)}).what, action::none);     // window restarts
  EXPECT_EQ(a.observe(4.4, {replica(0, "serving", 5)}).what, action::none);
  EXPECT_EQ(a.observe(4.5, {replica(0, "serving", 5)}).what, action::add);
}

TEST(autoscaler, full_kv_cache_adds_too) {
  autoscaler a(policy(1, 2));
  const std::vector<replica_view> full{replica(0, "serving", 0, 0.95, 4)};
  a.observe(0, full);
  const auto d = a.observe(2, full);
  EXPECT_EQ(d.what, action::add);
  EXPECT_EQ(d.reason_kind, "kv_cache");
}

TEST(autoscaler, cooldown_then_max_bound_the_adds) {
  autoscaler a(policy(1, 3));
  std::vector<replica_view> r{replica(0, "serving", 9, 0.5)};
  a.observe(0, r);
  ASSERT_EQ(a.observe(2, r).what, action::add);
  r.push_back(replica(1, "serving", 9, 0.5));
  EXPECT_EQ(a.observe(4, r).what, action::none);  // cooling down until 5
  EXPECT_EQ(a.observe(5, r).what, action::none);  // the window starts over after a change
  ASSERT_EQ(a.observe(7, r).what, action::add);
  r.push_back(replica(2, "serving", 9, 0.5));
  for (double t = 10; t < 30; t += 1) EXPECT_EQ(a.observe(t, r).what, action::none) << t;
}

TEST(autoscaler, remote_replicas_count_toward_max_and_are_never_drained) {
  autoscaler a(policy(1, 2));
  std::vector<replica_view> r{replica(0, "serving", 9), replica(1, "serving", 9, 0, 0, "remote:w")};
  a.observe(0, r);
  EXPECT_EQ(a.observe(5, r).what, action::none) << "two of two already";
  r[0].num_waiting = r[1].num_waiting = 0;
  r[1].num_running = 0;
  r[0].num_running = 3;
  a.observe(10, r);
  const auto d = a.observe(20, r);
  EXPECT_EQ(d.what, action::drain);
  EXPECT_EQ(d.replica, 0) << "the local one, though the remote one is emptier";
}

TEST(autoscaler, low_load_drains_the_emptiest_down_to_min_one_at_a_time) {
  autoscaler a(policy(1, 4));
  std::vector<replica_view> r{replica(0, "serving", 0, 0.1, 2), replica(1, "serving", 0, 0.1, 0),
                              replica(2, "serving", 0, 0.1, 2)};
  EXPECT_EQ(a.observe(0, r).what, action::none);
  EXPECT_EQ(a.observe(3.9, r).what, action::none);
  const auto d = a.observe(4, r);
  ASSERT_EQ(d.what, action::drain);
  EXPECT_EQ(d.replica, 1);
  EXPECT_EQ(d.reason_kind, "low_load");
  r[1].state = "draining";
  EXPECT_EQ(a.observe(20, r).what, action::none) << "one drain at a time";
  r.erase(r.begin() + 1);
  a.observe(21, r);
  const auto next = a.observe(25, r);
  ASSERT_EQ(next.what, action::drain);
  EXPECT_EQ(next.replica, 2) << "the newest on a tie";
  r.pop_back();
  a.observe(30, r);
  EXPECT_EQ(a.observe(60, r).what, action::none) << "at MIN";
}

TEST(autoscaler, admin_changes_start_the_cooldown) {
  autoscaler a(policy(1, 3));
  const std::vector<replica_view> busy{replica(0, "serving", 5)};
  a.observe(0, busy);
  a.changed(1.5);
  EXPECT_EQ(a.observe(2, busy).what, action::none);  // the window starts over here
  EXPECT_EQ(a.observe(3.5, busy).what, action::none);
  EXPECT_EQ(a.observe(4.4, busy).what, action::none) << "still cooling down";
  EXPECT_EQ(a.observe(4.5, busy).what, action::add);
}

}  // namespace
}  // namespace actorllm
