// The KV budget of several models: an even share of what is left as each loads, what a model
// leaves unused going to those after it, and a model whose pools do not fit refused.
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
  EXPECT_EQ(split.share(), 130 * mib_bytes);  // the rest is shared by the two after it
  split.skip();                               // the second failed to load: it takes nothing
  EXPECT_EQ(split.share(), 260 * mib_bytes);
  EXPECT_EQ(split.take(260 * mib_bytes), "");
  EXPECT_EQ(split.left(), 0);
  EXPECT_EQ(split.models_left(), 0);
}

TEST(kv_split, pools_larger_than_what_is_left_are_refused_with_the_numbers) {
  kv_split split(100 * mib_bytes, 2);
  EXPECT_EQ(split.take(80 * mib_bytes), "");
  EXPECT_EQ(split.take(30 * mib_bytes),
            "its KV pools need 30.0 MiB, and 20.0 MiB of the 100.0 MiB KV budget "
            "(--models-kv-budget) are left");
  EXPECT_EQ(split.left(), 20 * mib_bytes);  // nothing taken
  EXPECT_EQ(split.models_left(), 0);
}

}  // namespace
}  // namespace actorllm
