// Placing replicas on devices: one worker per device, the lowest free first, given back when a
// replica stops; a shared host (the CPU backend) never runs out.
#include "actors/system/device_slots.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

namespace actorllm {
namespace {

using devices = std::vector<int32_t>;

TEST(device_slots, each_replica_takes_its_own_devices_until_none_are_left) {
  device_slots slots(3, 1);
  EXPECT_EQ(slots.replicas_free(), 3);
  EXPECT_EQ(slots.acquire(0), devices{0});
  EXPECT_EQ(slots.acquire(1), devices{1});
  EXPECT_EQ(slots.acquire(7), devices{2});
  EXPECT_EQ(slots.replicas_free(), 0);
  EXPECT_EQ(slots.acquire(8), std::nullopt);
  EXPECT_EQ(slots.label(1), "cuda:1");
  EXPECT_EQ(slots.label(8), "");
}

TEST(device_slots, a_replica_asking_again_keeps_its_devices) {
  device_slots slots(2, 1);
  ASSERT_EQ(slots.acquire(4), devices{0});
  EXPECT_EQ(slots.acquire(4), devices{0});  // a respawned worker returns to its device
  EXPECT_EQ(slots.replicas_free(), 1);
}

TEST(device_slots, released_devices_go_to_the_next_replica_lowest_first) {
  device_slots slots(3, 1);
  slots.acquire(0);
  slots.acquire(1);
  slots.acquire(2);
  slots.release(1);
  slots.release(1);  // twice is once
  slots.release(9);  // never placed: nothing
  EXPECT_EQ(slots.replicas_free(), 1);
  EXPECT_EQ(slots.acquire(3), devices{1});
  slots.release(0);
  slots.release(2);
  EXPECT_EQ(slots.acquire(4), devices{0});
  EXPECT_EQ(slots.acquire(5), devices{2});
}

TEST(device_slots, tensor_parallel_ranks_take_distinct_devices) {
  device_slots slots(5, 2);
  EXPECT_EQ(slots.replicas_free(), 2);
  EXPECT_EQ(slots.acquire(0), (devices{0, 1}));
  EXPECT_EQ(slots.acquire(1), (devices{2, 3}));
  EXPECT_EQ(slots.acquire(2), std::nullopt) << "one device left for two ranks";
  EXPECT_EQ(slots.label(1), "cuda:2,3");
  slots.release(0);
  EXPECT_EQ(slots.acquire(2), (devices{0, 1}));
}

TEST(device_slots, a_named_device_is_taken_only_when_it_and_the_next_ranks_are_free) {
  device_slots one(4, 1);
  EXPECT_TRUE(one.placeable(2));
  EXPECT_EQ(one.acquire(0, 2), devices{2});
  EXPECT_FALSE(one.placeable(2)) << "asking takes nothing, acquiring does";
  EXPECT_TRUE(one.placeable());
  EXPECT_EQ(one.acquire(1, 2), std::nullopt) << "taken";
  EXPECT_EQ(one.acquire(1, 4), std::nullopt) << "no device 4";
  EXPECT_EQ(one.acquire(1, -1), std::nullopt);
  EXPECT_EQ(one.acquire(1), devices{0}) << "the lowest free, around the named one";

  device_slots pairs(4, 2);
  EXPECT_EQ(pairs.acquire(0, 1), (devices{1, 2}));
  EXPECT_EQ(pairs.acquire(1, 0), std::nullopt) << "device 1 is taken";
  EXPECT_EQ(pairs.acquire(1, 3), std::nullopt) << "no device 4 for rank 1";
  EXPECT_EQ(pairs.acquire(1), (devices{0, 3})) << "unnamed: any free devices, lowest first";
}

TEST(device_slots, a_shared_host_places_every_replica_on_device_zero) {
  device_slots slots(0, 2);
  EXPECT_EQ(slots.replicas_free(), INT32_MAX);
  for (int32_t r = 0; r < 100; ++r) EXPECT_EQ(slots.acquire(r), (devices{0, 0}));
  EXPECT_EQ(slots.label(3), "cpu");
}

TEST(device_slots, a_replica_has_at_least_one_worker) {
  EXPECT_THROW(device_slots(2, 0), std::invalid_argument);
}

TEST(device_fit, replicas_times_ranks_must_fit_the_visible_devices) {
  EXPECT_EQ(device_fit_error(2, 2, 1, nullptr), "");
  EXPECT_EQ(device_fit_error(0, 64, 4, nullptr), "") << "a shared host";
  EXPECT_EQ(device_fit_error(4, 2, 2, "0,1,2,3"), "");
  const std::string why = device_fit_error(2, 3, 1, "1,3");
  EXPECT_NE(why.find("3 replica(s) x 1 tensor-parallel rank(s) need 3 CUDA devices"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("2 visible (CUDA_VISIBLE_DEVICES=1,3)"), std::string::npos) << why;
  EXPECT_NE(device_fit_error(1, 1, 2, nullptr).find("CUDA_VISIBLE_DEVICES is unset"),
            std::string::npos);
}

}  // namespace
}  // namespace actorllm
