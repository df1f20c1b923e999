// Which models stay loaded: least recently used idle models make room, busy ones are never
// evicted (the load waits), a model larger than the limits is refused, --keep-alive expires.
#include "app/model_residency.hpp"

#include <gtest/gtest.h>

namespace actorllm::app {
namespace {

constexpr int64_t mib_bytes = int64_t{1} << 20;

resident_model idle(std::string name, double idle_s, int64_t mib = 10, int64_t kv_mib = 0) {
  return {std::move(name), mib * mib_bytes, kv_mib * mib_bytes, false, idle_s};
}

resident_model busy(std::string name, int64_t mib = 10, int64_t kv_mib = 0) {
  return {std::move(name), mib * mib_bytes, kv_mib * mib_bytes, true, 0};
}

TEST(model_residency, without_limits_every_model_fits) {
  const auto plan = plan_room({idle("a", 5), busy("b")}, 100 * mib_bytes, 0, {});
  EXPECT_EQ(plan.outcome, room_plan::verdict::fits);
  EXPECT_TRUE(plan.evict.empty());
}

TEST(model_residency, the_least_recently_used_idle_model_makes_room_for_one_more) {
  residency_limits limits;
  limits.max_loaded = 2;
  const auto plan = plan_room({idle("a", 5), idle("b", 50)}, mib_bytes, 0, limits);
  EXPECT_EQ(plan.outcome, room_plan::verdict::fits);
  EXPECT_EQ(plan.evict, std::vector<std::string>{"b"});  // idle longest
  // A busy model is passed over, however long ago it was last used.
  const auto passed = plan_room({busy("old"), idle("a", 5)}, mib_bytes, 0, limits);
  EXPECT_EQ(passed.evict, std::vector<std::string>{"a"});
}

TEST(model_residency, memory_evicts_as_many_as_it_takes_least_recent_first) {
  residency_limits limits;
  limits.memory_bytes = 100 * mib_bytes;
  const auto plan =
      plan_room({idle("a", 1, 30), idle("b", 9, 30), idle("c", 5, 30)}, 60 * mib_bytes, 0, limits);
  EXPECT_EQ(plan.outcome, room_plan::verdict::fits);
  EXPECT_EQ(plan.evict, (std::vector<std::string>{"b", "c"}));  // 90 - 60 + 60 <= 100
}

TEST(model_residency, the_kv_budget_is_a_limit_of_its_own) {
  residency_limits limits;
  limits.kv_bytes = 64 * mib_bytes;
  const auto plan = plan_room({idle("a", 3, 40, 32), idle("b", 7, 40, 32)}, 40 * mib_bytes,
                              16 * mib_bytes, limits);
  EXPECT_EQ(plan.evict, std::vector<std::string>{"b"});
  EXPECT_EQ(plan_room({}, mib_bytes, 65 * mib_bytes, limits).outcome, room_plan::verdict::never);
}

TEST(model_residency, a_load_that_needs_a_busy_model_gone_waits_and_evicts_nothing) {
  residency_limits limits;
  limits.max_loaded = 2;
  const auto plan = plan_room({busy("a"), idle("b", 9)}, mib_bytes, 0, limits);
  EXPECT_EQ(plan.outcome, room_plan::verdict::fits);  // b goes
  const auto waits = plan_room({busy("a"), busy("b")}, mib_bytes, 0, limits);
  EXPECT_EQ(waits.outcome, room_plan::verdict::wait);
  EXPECT_TRUE(waits.evict.empty());
  EXPECT_NE(waits.why.find("--max-loaded-models (2)"), std::string::npos) << waits.why;
  limits = {};
  limits.memory_bytes = 50 * mib_bytes;
  const auto memory = plan_room({busy("a", 30), idle("b", 1, 10)}, 30 * mib_bytes, 0, limits);
  EXPECT_EQ(memory.outcome, room_plan::verdict::wait);  // evicting b alone would not do
  EXPECT_TRUE(memory.evict.empty());
}

TEST(model_residency, a_model_larger_than_the_budget_never_loads) {
  residency_limits limits;
  limits.memory_bytes = 50 * mib_bytes;
  const auto plan = plan_room({}, 51 * mib_bytes, 0, limits);
  EXPECT_EQ(plan.outcome, room_plan::verdict::never);
  EXPECT_EQ(plan.why,
            "it needs 51.0 MiB (weights and KV pools), more than the 50.0 MiB of "
            "--models-memory-budget");
}

TEST(model_residency, keep_alive_expires_idle_models_longest_idle_first) {
  residency_limits limits;
  EXPECT_TRUE(expired_models({idle("a", 1e6)}, limits).empty());  // 0: kept loaded
  limits.keep_alive_s = 30;
  EXPECT_EQ(expired_models({idle("a", 31), busy("b"), idle("c", 29), idle("d", 90)}, limits),
            (std::vector<std::string>{"d", "a"}));
}

}  // namespace
}  // namespace actorllm::app
