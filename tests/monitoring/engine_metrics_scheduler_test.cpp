// engine_metrics fed by the real scheduler core (and the fake model of the scheduler tests)
// through a run with swapping and prefix sharing: what the metrics say must agree with what
// the requests received and with the core's own statistics.
#include <gtest/gtest.h>

#include <algorithm>

#include "metrics_test_util.hpp"
#include "tests/cores/scheduler_harness.hpp"

namespace actorllm {
namespace {

using testing::counter_value;
using testing::gauge_value;

TEST(engine_metrics_with_scheduler, counters_agree_with_the_outputs_and_the_core) {
  // 12 blocks of 4 tokens: one request of 9 + 20 tokens needs 8, so two cannot run together.
  scheduler_options options = testing::small_options(/*num_device_blocks=*/12,
                                                     /*num_cpu_blocks=*/64);
  options.scheduler.preemption = preemption_mode::swap;
  testing::harness h(options);
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, options.max_model_len});

  double now = 0.0;
  int64_t num_prompt_tokens = 0;
  int64_t num_expected_tokens = 0;
  const int32_t num_requests = 6;
  for (int32_t i = 0; i < num_requests; ++i) {
    std::string id = "r";
    id += std::to_string(i);
    auto prompt = testing::make_prompt(8);  // one shared prefix: the prefix cache hits
    prompt.push_back(100 + i);
    // The first has two choices sharing the prompt's blocks; short, so that it fits.
    int32_t n = i == 0 ? 2 : 1;
    int32_t max_tokens = i == 0 ? 8 : 20;
    num_prompt_tokens += static_cast<int64_t>(prompt.size());
    num_expected_tokens += n * max_tokens;
    h.add(id, prompt, testing::make_params(max_tokens, n));
    metrics.on_request_added(id, n, now);
  }
  metrics.on_stats(h.sched.stats());
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_waiting"), num_requests);

  int64_t num_generated = 0;  // the last cumulative count of each choice, summed at the end
  std::map<std::pair<std::string, int32_t>, int32_t> last_count;
  double max_swapped = 0;
  int64_t num_steps = 0;
  while (h.sched.has_work()) {
    now += 0.01;
    step_plan plan = h.sched.schedule();
    metrics.on_scheduled(plan, now);
    now += 0.02;
    auto outputs = h.sched.update(h.model.run(plan));
    for (const auto& o : outputs) last_count[{o.request_id, o.index}] = o.num_generated_tokens;
    metrics.on_outputs(outputs, now);
    metrics.on_step(h.sched.stats(), 0.02);
    ++num_steps;
    max_swapped = std::max(max_swapped, gauge_value(registry, "actorllm:num_requests_swapped"));
    ASSERT_LT(now, 100.0) << "no progress";
  }
  for (const auto& [choice, count] : last_count) num_generated += count;
  const scheduler_stats final_stats = h.sched.stats();

  EXPECT_EQ(num_generated, num_expected_tokens) << "every choice ran to max_tokens";
  EXPECT_EQ(counter_value(registry, "actorllm:generation_tokens_total"), num_generated);
  EXPECT_EQ(counter_value(registry, "actorllm:prompt_tokens_total"), num_prompt_tokens);
  EXPECT_EQ(
      counter_value(registry, "actorllm:request_success_total", {{"finished_reason", "length"}}),
      num_requests);
  ASSERT_GT(final_stats.num_preemptions, 0) << "8 blocks must force preemption";
  EXPECT_GT(max_swapped, 0);
  EXPECT_EQ(counter_value(registry, "actorllm:num_preemptions_total"), final_stats.num_preemptions);
  EXPECT_EQ(counter_value(registry, "actorllm:prefix_cache_queries_total"),
            final_stats.prefix_cache_queries);
  EXPECT_EQ(counter_value(registry, "actorllm:prefix_cache_hits_total"),
            final_stats.prefix_cache_hits);
  // Idle: every gauge back to rest.
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_running"), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_waiting"), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:num_requests_swapped"), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:kv_cache_usage_perc"), 0);
  EXPECT_EQ(gauge_value(registry, "actorllm:cpu_kv_cache_usage_perc"), 0);

  auto count_of = [&](const char* name) {
    auto m = testing::find_metric(registry, name);
    return m ? static_cast<int64_t>(m->histogram.sample_count) : -1;
  };
  EXPECT_EQ(count_of("actorllm:time_to_first_token_seconds"), num_requests);
  EXPECT_EQ(count_of("actorllm:e2e_request_latency_seconds"), num_requests);
  EXPECT_EQ(count_of("actorllm:request_queue_time_seconds"), num_requests);
  EXPECT_EQ(count_of("actorllm:request_generation_tokens"), num_requests);
  EXPECT_EQ(count_of("actorllm:step_duration_seconds"), num_steps);
  EXPECT_EQ(count_of("actorllm:iteration_tokens_total"), num_steps);
  // One gap per token after a choice's first: each output here carries one token.
  EXPECT_EQ(count_of("actorllm:inter_token_latency_seconds"), num_generated - (num_requests + 1));
  EXPECT_EQ(metrics.snapshot(now).num_generation_tokens, num_generated);
}

TEST(engine_metrics_with_scheduler, speculative_counters_agree_with_the_core) {
  scheduler_options options = testing::small_options(/*num_device_blocks=*/48);
  options.speculative.method = speculative_method::ngram;  // the fake model proposes
  options.speculative.num_speculative_tokens = 3;
  testing::harness h(options);
  metrics_registry registry;
  engine_metrics metrics(registry, {"m", 0, options.max_model_len});
  for (int32_t i = 0; i < 4; ++i)
    h.add("r" + std::to_string(i), testing::make_prompt(5 + i), testing::make_params(40));
  while (h.sched.has_work()) {
    h.step();
    metrics.on_step(h.sched.stats(), 0.01);
  }
  const speculation_stats spec = h.sched.stats().speculation;
  ASSERT_GT(spec.num_accepted_tokens, 0);
  EXPECT_EQ(counter_value(registry, "actorllm:spec_decode_num_drafts_total"), spec.num_drafts);
  EXPECT_EQ(counter_value(registry, "actorllm:spec_decode_num_draft_tokens_total"),
            spec.num_draft_tokens);
  EXPECT_EQ(counter_value(registry, "actorllm:spec_decode_num_accepted_tokens_total"),
            spec.num_accepted_tokens);
  ASSERT_EQ(spec.accepted_per_position.size(), 3u);
  int64_t sum = 0;
  for (size_t i = 0; i < 3; ++i) {
    const auto at =
        counter_value(registry, "actorllm:spec_decode_num_accepted_tokens_per_pos_total",
                      {{"position", std::to_string(i)}});
    EXPECT_EQ(at, spec.accepted_per_position[i]) << "position " << i;
    sum += at;
    if (i > 0) {
      EXPECT_LE(at, spec.accepted_per_position[i - 1]);  // a draft stands on the last
    }
  }
  EXPECT_EQ(sum, spec.num_accepted_tokens);
  const stats_snapshot snapshot = metrics.snapshot(1.0);
  EXPECT_EQ(snapshot.num_draft_tokens, spec.num_draft_tokens);
  EXPECT_EQ(snapshot.num_accepted_tokens, spec.num_accepted_tokens);
}

}  // namespace
}  // namespace actorllm
