// The KV budget of several models: an even share of what is left among the free slots as each
// loads, what a model leaves unused going to those after it, an unloaded model's bytes back,
// and a model whose pools do not fit refused.
#include "actors/system/kv_split.hpp"

#include <gtest/gtest.h>

namespace actorllm {
namespace {

constexpr int64_t mib_bytes = int64_t{1} << 20;

TEST(kv_split, each_model_gets_an_even_share_of_what_is_left) {
  kv_split split(300 * mib_bytes, 3);
  EXPECT_EQ(split.share(), 100 * mib_bytes);
  EXPECT_EQ(split.take(40 * mib_bytes), "");  // a small model leaves some of its share
  EXPECT_EQ(split.left(), 260 * mib_bytes);
  EXPECT_EQ(split.share(), 130 * mib_bytes);  // the rest is shared by the two slots left
  EXPECT_EQ(split.take(130 * mib_bytes), "");
  EXPECT_EQ(split.share(), 130 * mib_bytes);  // the last slot gets all that is left
  EXPECT_EQ(split.take(130 * mib_bytes), "");
  EXPECT_EQ(split.left(), 0);
  EXPECT_EQ(split.held(), 3);
}

TEST(kv_split, an_unloaded_model_gives_its_bytes_and_its_slot_back) {
  kv_split split(200 * mib_bytes, 2);
  EXPECT_EQ(split.take(100 * mib_bytes), "");
  EXPECT_EQ(split.take(100 * mib_bytes), "");
  EXPECT_EQ(split.share(), 0);
  split.give_back(100 * mib_bytes);
  EXPECT_EQ(split.held(), 1);
  EXPECT_EQ(split.share(), 100 * mib_bytes);  // the next model gets what the first had
  split.set_slots(3);                         // a model was added to the server
  EXPECT_EQ(split.share(), 50 * mib_bytes);
  split.give_back(500 * mib_bytes);  // never more than the budget
  EXPECT_EQ(split.left(), 200 * mib_bytes);
}

TEST(kv_split, pools_larger_than_what_is_left_are_refused_with_the_numbers) {
  kv_split split(100 * mib_bytes, 2);
  EXPECT_EQ(split.take(80 * mib_bytes), "");
  EXPECT_EQ(split.take(30 * mib_bytes),
            "its KV pools need 30.0 MiB, and 20.0 MiB of the 100.0 MiB KV budget "
            "(--models-kv-budget) are left");
  EXPECT_EQ(split.left(), 20 * mib_bytes);  // nothing taken
  EXPECT_EQ(split.held(), 1);
}

}  // namespace
}  // namespace actorllm
