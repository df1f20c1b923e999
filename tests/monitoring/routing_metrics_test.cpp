// The router's choices as metrics: every reason's series from the start at 0, and the prompt
// blocks routed with those the chosen replica held.
#include "monitoring/routing_metrics.hpp"

#include <gtest/gtest.h>

#include "metrics_test_util.hpp"

namespace actorllm {
namespace {

double value_of(const metrics_registry& r, const std::string& name, testing::label_map labels) {
  const auto m = testing::find_metric(r, "actorllm:" + name, labels);
  return m ? m->counter.value : -1;
}

TEST(routing_metrics, decisions_by_reason_and_the_routers_hit_ratio) {
  metrics_registry registry;
  routing_metrics metrics(registry, "stories260K");
  for (const char* reason : {"cache_hit", "least_load", "balance", "round_robin"})
    EXPECT_EQ(value_of(registry, "router_decisions_total", {{"reason", reason}}), 0) << reason;
  metrics.route("cache_hit", 3, 4);
  metrics.route("least_load", 0, 2);
  metrics.route("cache_hit", 1, 1);
  EXPECT_EQ(value_of(registry, "router_decisions_total",
                     {{"reason", "cache_hit"}, {"model_name", "stories260K"}}),
            2);
  EXPECT_EQ(value_of(registry, "router_decisions_total", {{"reason", "least_load"}}), 1);
  EXPECT_EQ(value_of(registry, "router_prompt_blocks_total", {{"kind", "prompt"}}), 7);
  EXPECT_EQ(value_of(registry, "router_prompt_blocks_total", {{"kind", "cached"}}), 4);

  // The engine view reads the same counts.
  const router_view_row view = metrics.view();
  EXPECT_EQ(view.prompt_blocks, 7);
  EXPECT_EQ(view.cached_blocks, 4);
  ASSERT_EQ(view.decisions.size(), 5u);
  EXPECT_EQ(view.decisions[0], (std::pair<std::string, int64_t>{"cache_hit", 2}));
  EXPECT_EQ(view.decisions[1], (std::pair<std::string, int64_t>{"least_load", 1}));
}

}  // namespace
}  // namespace actorllm
