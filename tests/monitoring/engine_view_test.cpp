// The JSON of GET /v1/engine/stats: every documented field of a replica, the prefix-cache hit
// rate from its token counters (0 before any query), actors by name, and totals summed over
// the replicas, dead ones included.
#include "monitoring/engine_view.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace actorllm {
namespace {

TEST(engine_view, replicas_actors_and_totals) {
  replica_view_row a;
  a.id = 0;
  a.device = "cpu";
  a.num_waiting = 3;
  a.num_running = 2;
  a.num_swapped = 1;
  a.kv_cache_usage = 0.5;
  a.cpu_cache_usage = 0.25;
  a.prefix_cache_queries = 200;
  a.prefix_cache_hits = 50;
  a.tier_cache_queries = 150;
  a.tier_cache_hits = 30;
  a.tier_usage = 0.5;
  a.tier_failed_loads = 2;
  a.num_preemptions = 4;
  a.step_seconds = 0.004;
  a.tokens_per_step = 17;
  a.num_steps = 99;
  a.prompt_tokens = 300;
  a.generation_tokens = 1000;
  a.finished = {1, 2, 3, 0};
  replica_view_row b;
  b.id = 1;
  b.state = "dead";
  b.prompt_tokens = 10;
  b.generation_tokens = 20;
  b.finished = {0, 5, 1, 1};
  const auto j = nlohmann::json::parse(
      engine_view_json("m", 1764630000.5, {a, b}, {{"router", 0.0}, {"replica0-worker0", 2.0}},
                       {{{"cache_hit", 3}, {"least_load", 1}}, 10, 6}));
  EXPECT_EQ(j["object"], "engine.stats");
  EXPECT_EQ(j["model"], "m");
  EXPECT_DOUBLE_EQ(j["time"].get<double>(), 1764630000.5);
  ASSERT_EQ(j["replicas"].size(), 2u);
  const auto& r = j["replicas"][0];
  EXPECT_EQ(r["id"], 0);
  EXPECT_EQ(r["state"], "serving");
  EXPECT_EQ(r["device"], "cpu");
  EXPECT_EQ(r["num_waiting"], 3);
  EXPECT_EQ(r["num_running"], 2);
  EXPECT_EQ(r["num_swapped"], 1);
  EXPECT_DOUBLE_EQ(r["kv_cache_usage"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(r["cpu_cache_usage"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(r["prefix_cache_hit_rate"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(r["tier_cache_hit_rate"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(r["kv_offload_usage"].get<double>(), 0.5);
  EXPECT_EQ(r["kv_offload_failed_loads"], 2);
  EXPECT_EQ(r["num_preemptions"], 4);
  EXPECT_DOUBLE_EQ(r["step_seconds"].get<double>(), 0.004);
  EXPECT_EQ(r["tokens_per_step"], 17);
  EXPECT_EQ(r["num_steps"], 99);
  EXPECT_EQ(r["prompt_tokens"], 300);
  EXPECT_EQ(r["generation_tokens"], 1000);
  EXPECT_EQ(r["requests_finished"],
            (nlohmann::json{{"stop", 1}, {"length", 2}, {"abort", 3}, {"error", 0}}));
  EXPECT_EQ(j["replicas"][1]["state"], "dead");
  EXPECT_DOUBLE_EQ(j["replicas"][1]["prefix_cache_hit_rate"].get<double>(), 0.0);
  ASSERT_EQ(j["actors"].size(), 2u);
  EXPECT_EQ(j["actors"][1]["name"], "replica0-worker0");
  EXPECT_EQ(j["actors"][1]["mailbox_depth"], 2);
  EXPECT_EQ(j["totals"]["prompt_tokens"], 310);
  EXPECT_EQ(j["totals"]["generation_tokens"], 1020);
  EXPECT_EQ(j["totals"]["requests_finished"]["length"], 7);
  EXPECT_EQ(j["totals"]["requests_finished"]["error"], 1);
  EXPECT_EQ(j["router"]["decisions"], (nlohmann::json{{"cache_hit", 3}, {"least_load", 1}}));
  EXPECT_EQ(j["router"]["prompt_blocks"], 10);
  EXPECT_DOUBLE_EQ(j["router"]["cache_hit_ratio"].get<double>(), 0.6);
}

TEST(engine_view, an_engine_with_no_replica_is_still_an_object) {
  const auto j = nlohmann::json::parse(engine_view_json("m", 0, {}, {}));
  EXPECT_TRUE(j["replicas"].empty());
  EXPECT_TRUE(j["actors"].empty());
  EXPECT_EQ(j["totals"]["generation_tokens"], 0);
}

}  // namespace
}  // namespace actorllm
