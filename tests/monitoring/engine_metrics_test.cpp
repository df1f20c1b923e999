// engine_metrics: gauges hold the last stats, cumulative counters advance by differences,
// histograms use vLLM's buckets, and request outputs become token counts and latencies.
#include "monitoring/engine_metrics.hpp"

#include <gtest/gtest.h>

#include "metrics_test_util.hpp"
#include "monitoring/buckets.hpp"

namespace actorllm {
namespace {

using testing::counter_value;
using testing::gauge_value;

const testing::label_map replica0 = {{"model_name", "m"}, {"replica", "0"}};

request_output output_of(const std::string& id, int32_t num_prompt, int32_t num_generated,
                         finish_reason finish = finish_reason::none, int32_t index = 0) {
  request_output o;
  o.request_id = id;
  o.index = index;
  o.num_prompt_tokens = num_prompt;
  o.num_generated_tokens = num_generated;
  o.finish = finish;
  return o;
}

TEST(engine_metrics, gauges_reflect_the_last_step) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  metrics.on_step(testing::sample_stats(), 0.01);
  scheduler_stats idle;
  idle.device = {8, 0, 8, 0};
  idle.cpu = {64, 0, 64, 0};
  metrics.on_step(idle, 0.01);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_running", replica0), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_waiting", replica0), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_swapped", replica0), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:kv_cache_usage_perc", replica0), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:cpu_kv_cache_usage_perc", replica0), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_free_blocks", {{"pool", "device"}}), 8);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_free_blocks", {{"pool", "cpu"}}), 64);
}

TEST(engine_metrics, gauges_of_one_step) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  metrics.on_stats(testing::sample_stats());
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_running", replica0), 5);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_waiting", replica0), 3);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_swapped", replica0), 1);
  EXPECT_DOUBLE_EQ(gauge_value(registry, "actorllm:kv_cache_usage_perc", replica0), 0.75);
  EXPECT_DOUBLE_EQ(gauge_value(registry, "actorllm:cpu_kv_cache_usage_perc", replica0), 0.25);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_free_blocks", {{"pool", "device"}}), 1);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_cached_blocks", {{"pool", "device"}}), 1);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_free_blocks", {{"pool", "cpu"}}), 48);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_cached_blocks", {{"pool", "cpu"}}), 0);
}

TEST(engine_metrics, cumulative_stats_advance_counters_by_their_difference) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  scheduler_stats s;
  s.num_preemptions = 2;
  s.prefix_cache_queries = 100;
  s.prefix_cache_hits = 30;
  metrics.on_step(s, 0.01);
  metrics.on_step(s, 0.01);  // nothing new
  EXPECT_EQ(counter_value(registry, "actorllm:num_preemptions_total", replica0), 2);
  s.num_preemptions = 5;
  s.prefix_cache_queries = 164;
  s.prefix_cache_hits = 62;
  metrics.on_stats(s);
  EXPECT_EQ(counter_value(registry, "actorllm:num_preemptions_total", replica0), 5);
  EXPECT_EQ(counter_value(registry, "actorllm:prefix_cache_queries_total", replica0), 164);
  EXPECT_EQ(counter_value(registry, "actorllm:prefix_cache_hits_total", replica0), 62);
  // A core that restarts counts from zero again; the counter keeps growing.
  s.num_preemptions = 1;
  metrics.on_stats(s);
  EXPECT_EQ(counter_value(registry, "actorllm:num_preemptions_total", replica0), 6);
}

TEST(engine_metrics, the_second_kv_tier_is_counted_as_vllms_external_prefix_cache) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  scheduler_stats s;
  s.tier_cache_queries = 96;
  s.tier_cache_hits = 64;
  s.tier = {/*num_slots=*/8, /*num_used=*/6, /*stored=*/10,
            /*evicted=*/4,   /*loaded=*/4,
            /*failed=*/1};
  metrics.on_stats(s);
  EXPECT_EQ(counter_value(registry, "actorllm:external_prefix_cache_queries_total", replica0), 96);
  EXPECT_EQ(counter_value(registry, "actorllm:external_prefix_cache_hits_total", replica0), 64);
  EXPECT_EQ(counter_value(registry, "actorllm:kv_offload_stored_blocks_total", replica0), 10);
  EXPECT_EQ(counter_value(registry, "actorllm:kv_offload_evicted_blocks_total", replica0), 4);
  EXPECT_EQ(counter_value(registry, "actorllm:kv_offload_loaded_blocks_total", replica0), 4);
  EXPECT_EQ(counter_value(registry, "actorllm:kv_offload_failed_loads_total", replica0), 1);
  EXPECT_DOUBLE_EQ(gauge_value(registry, "actorllm:kv_offload_usage_perc", replica0), 0.75);
  const replica_view_row view = metrics.view();
  EXPECT_EQ(view.tier_cache_hits, 64);
  EXPECT_EQ(view.tier_cache_queries, 96);
  EXPECT_DOUBLE_EQ(view.tier_usage, 0.75);
  EXPECT_EQ(view.tier_failed_loads, 1);
}

TEST(engine_metrics, histograms_use_vllm_buckets) {
  testing::populated_registry p;
  auto bounds_of = [&](const std::string& name) {
    auto m = testing::find_metric(p.registry, "actorllm:" + name);
    EXPECT_TRUE(m) << name;
    auto bounds = m ? testing::bucket_bounds(*m) : std::vector<double>{};
    if (!bounds.empty()) bounds.pop_back();  // +Inf, which every histogram has
    return bounds;
  };
  const std::vector<double> ttft = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                    0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                    20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  const std::vector<double> itl = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                   0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
  const std::vector<double> e2e = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                   5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  const std::vector<double> tokens_512 = {1, 2, 5, 10, 20, 50, 100, 200, 500};
  EXPECT_EQ(bounds_of("time_to_first_token_seconds"), ttft);
  EXPECT_EQ(bounds_of("inter_token_latency_seconds"), itl);
  EXPECT_EQ(bounds_of("e2e_request_latency_seconds"), e2e);
  EXPECT_EQ(bounds_of("request_queue_time_seconds"), e2e);
  EXPECT_EQ(bounds_of("request_prefill_time_seconds"), e2e);
  EXPECT_EQ(bounds_of("request_decode_time_seconds"), e2e);
  EXPECT_EQ(bounds_of("request_inference_time_seconds"), e2e);
  EXPECT_EQ(bounds_of("request_prompt_tokens"), tokens_512);
  EXPECT_EQ(bounds_of("request_generation_tokens"), tokens_512);
  EXPECT_EQ(bounds_of("iteration_tokens_total"), tokens_512);
  EXPECT_EQ(bounds_of("step_duration_seconds"), buckets::step_duration());
}

TEST(engine_metrics, structured_output_requests_and_mask_time) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  metrics.on_constrained_request();
  metrics.on_constrained_request();
  metrics.on_masks(0.00002);
  metrics.on_masks(0.003);
  EXPECT_EQ(counter_value(registry, "actorllm:structured_output_requests_total", replica0), 2);
  auto m = testing::find_metric(registry, "actorllm:structured_output_mask_seconds");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->histogram.sample_count, 2u);
  EXPECT_NEAR(m->histogram.sample_sum, 0.00302, 1e-9);
  auto bounds = testing::bucket_bounds(*m);
  bounds.pop_back();
  EXPECT_EQ(bounds, buckets::mask_time());
}

TEST(engine_metrics, one_two_five_buckets_end_at_max_model_len) {
  EXPECT_EQ(buckets::one_two_five(0), std::vector<double>{});
  EXPECT_EQ(buckets::one_two_five(1), std::vector<double>{1});
  EXPECT_EQ(buckets::one_two_five(128), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(buckets::one_two_five(2000),
            (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000}));
}

TEST(engine_metrics, outputs_count_tokens_and_time_requests) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  metrics.on_request_added("a", 1, 10.0);
  step_plan plan;
  plan.new_seqs.push_back({"a", 0, 0, 6, {}});
  metrics.on_scheduled(plan, 10.25);
  metrics.on_outputs({output_of("a", 6, 1)}, 10.5);
  metrics.on_outputs({output_of("a", 6, 2)}, 10.55);
  metrics.on_outputs({output_of("a", 6, 3, finish_reason::stop)}, 10.6);

  EXPECT_EQ(counter_value(registry, "actorllm:prompt_tokens_total", replica0), 6);
  EXPECT_EQ(counter_value(registry, "actorllm:generation_tokens_total", replica0), 3);
  EXPECT_EQ(
      counter_value(registry, "actorllm:request_success_total", {{"finished_reason", "stop"}}), 1);
  EXPECT_EQ(
      counter_value(registry, "actorllm:request_success_total", {{"finished_reason", "length"}}),
      0);
  auto ttft = testing::find_metric(registry, "actorllm:time_to_first_token_seconds");
  ASSERT_TRUE(ttft);
  EXPECT_EQ(ttft->histogram.sample_count, 1u);
  EXPECT_DOUBLE_EQ(ttft->histogram.sample_sum, 0.5);
  auto itl = testing::find_metric(registry, "actorllm:inter_token_latency_seconds");
  EXPECT_EQ(itl->histogram.sample_count, 2u);
  EXPECT_NEAR(itl->histogram.sample_sum, 0.1, 1e-9);
  auto queue = testing::find_metric(registry, "actorllm:request_queue_time_seconds");
  EXPECT_DOUBLE_EQ(queue->histogram.sample_sum, 0.25);
  auto e2e = testing::find_metric(registry, "actorllm:e2e_request_latency_seconds");
  EXPECT_NEAR(e2e->histogram.sample_sum, 0.6, 1e-9);
  // vLLM's phases: scheduled at 10.25, first token at 10.5, done at 10.6.
  auto phase = [&](const char* name) {
    auto m = testing::find_metric(registry, std::string("actorllm:") + name);
    EXPECT_TRUE(m && m->histogram.sample_count == 1u) << name;
    return m ? m->histogram.sample_sum : -1.0;
  };
  EXPECT_NEAR(phase("request_prefill_time_seconds"), 0.25, 1e-9);
  EXPECT_NEAR(phase("request_decode_time_seconds"), 0.1, 1e-9);
  EXPECT_NEAR(phase("request_inference_time_seconds"), 0.35, 1e-9);
  auto generated = testing::find_metric(registry, "actorllm:request_generation_tokens");
  EXPECT_EQ(generated->histogram.sample_sum, 3);
}

TEST(engine_metrics, snapshot_has_cumulative_tokens_and_the_last_gauges) {
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, 128});
  metrics.on_request_added("a", 1, 0.0);
  metrics.on_outputs({output_of("a", 6, 4)}, 1.0);
  metrics.on_step(testing::sample_stats(), 0.01);
  stats_snapshot s = metrics.snapshot(2.0);
  EXPECT_EQ(s.now, 2.0);
  EXPECT_EQ(s.num_prompt_tokens, 6);
  EXPECT_EQ(s.num_generation_tokens, 4);
  EXPECT_EQ(s.num_running, 5);
  EXPECT_EQ(s.num_waiting, 3);
  EXPECT_EQ(s.num_swapped, 1);
  EXPECT_DOUBLE_EQ(s.gpu_kv_cache_usage, 0.75);
  EXPECT_DOUBLE_EQ(s.cpu_kv_cache_usage, 0.25);
}

TEST(http_metrics, counts_by_path_and_status_and_bounds_the_paths) {
  metrics_registry registry;
  http_metrics http(registry, "m");
  http.on_request("/v1/completions", 200);
  http.on_request("/v1/completions?x=1", 200);
  http.on_request("/v1/completions", 400);
  EXPECT_EQ(counter_value(registry, "actorllm:http_requests_total",
                          {{"path", "/v1/completions"}, {"status", "200"}}),
            2);
  EXPECT_EQ(counter_value(registry, "actorllm:http_requests_total",
                          {{"path", "/v1/completions"}, {"status", "400"}}),
            1);
  for (std::size_t i = 0; i < 2 * http_metrics::max_paths; ++i)
    http.on_request("/scan/" + std::to_string(i), 404);
  EXPECT_GT(counter_value(registry, "actorllm:http_requests_total",
                          {{"path", "other"}, {"status", "404"}}),
            0);
  auto all = registry.prometheus_registry()->Collect();
  EXPECT_LE(testing::find_family(all, "actorllm:http_requests_total")->metric.size(),
            http_metrics::max_paths + 2);
}

TEST(actor_metrics, mailbox_depths_and_workers) {
  metrics_registry registry;
  actor_metrics actors(registry, "m");
  actors.set_mailbox_depth("router", 4);
  actors.set_mailbox_depth("router", 1);
  actors.set_worker_up("worker-0-0", true);
  actors.set_worker_up("worker-0-1", false);
  EXPECT_EQ(gauge_value(registry, "actorllm:actor_mailbox_depth", {{"actor", "router"}}), 1);
  EXPECT_EQ(gauge_value(registry, "actorllm:worker_up", {{"worker", "worker-0-0"}}), 1);
  EXPECT_EQ(gauge_value(registry, "actorllm:worker_up", {{"worker", "worker-0-1"}}), 0);
}

TEST(cache_config_info, one_series_with_the_configuration_as_labels) {
  metrics_registry registry;
  cache_config_info info(registry, "m", 0);
  info.set({16, 100, 50, 4.0});
  info.set({16, 8, 64, 0.5});
  auto all = registry.prometheus_registry()->Collect();
  const auto* family = testing::find_family(all, "actorllm:cache_config_info");
  ASSERT_TRUE(family);
  ASSERT_EQ(family->metric.size(), 1u) << "setting again replaces the series";
  EXPECT_EQ(gauge_value(registry, "actorllm:cache_config_info",
                        {{"block_size", "16"},
                         {"num_gpu_blocks", "8"},
                         {"num_cpu_blocks", "64"},
                         {"swap_space", "0.5"}}),
            1);
}

}  // namespace
}  // namespace actorllm
