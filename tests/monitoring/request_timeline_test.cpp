// request_timeline: queue time, TTFT, inter-token gaps and finished requests from made-up
// clocks, with n > 1, preemption and repeated outputs.
#include "monitoring/request_timeline.hpp"

#include <gtest/gtest.h>

namespace actorllm {
namespace {

request_output out(const std::string& id, int32_t index, int32_t num_generated,
                   finish_reason finish = finish_reason::none) {
  request_output o;
  o.request_id = id;
  o.index = index;
  o.num_prompt_tokens = 10;
  o.num_generated_tokens = num_generated;
  o.finish = finish;
  return o;
}

step_plan plan_of(std::initializer_list<std::pair<const char*, int32_t>> seqs) {
  step_plan plan;
  for (auto [id, index] : seqs) plan.new_seqs.push_back({id, 0, index, 10, {}});
  return plan;
}

TEST(request_timeline, queue_time_once_per_request) {
  request_timeline t;
  t.on_added("a", 2, 1.0);
  t.on_added("b", 1, 2.0);
  EXPECT_EQ(t.on_scheduled(plan_of({{"a", 0}, {"a", 1}}), 3.0), std::vector<double>{2.0});
  // b, and a again after a recompute: only b is new.
  EXPECT_EQ(t.on_scheduled(plan_of({{"a", 0}, {"b", 0}}), 4.0), std::vector<double>{2.0});
  EXPECT_TRUE(t.on_scheduled(plan_of({{"unknown", 0}}), 5.0).empty());
}

TEST(request_timeline, ttft_itl_and_finish) {
  request_timeline t;
  t.on_added("a", 1, 0.0);
  auto u1 = t.on_outputs({out("a", 0, 1)}, 0.5);
  EXPECT_EQ(u1.num_prompt_tokens, 10);
  EXPECT_EQ(u1.num_generation_tokens, 1);
  EXPECT_EQ(u1.time_to_first_token, std::vector<double>{0.5});
  EXPECT_TRUE(u1.inter_token_latency.empty());
  auto u2 = t.on_outputs({out("a", 0, 2)}, 0.75);
  EXPECT_EQ(u2.num_prompt_tokens, 0) << "the prompt counts once";
  EXPECT_TRUE(u2.time_to_first_token.empty());
  EXPECT_EQ(u2.inter_token_latency, std::vector<double>{0.25});
  auto u3 = t.on_outputs({out("a", 0, 3, finish_reason::length)}, 1.0);
  ASSERT_EQ(u3.finished.size(), 1u);
  EXPECT_EQ(u3.finished[0].reason, finish_reason::length);
  EXPECT_EQ(u3.finished[0].num_prompt_tokens, 10);
  EXPECT_EQ(u3.finished[0].num_generation_tokens, 3);
  EXPECT_DOUBLE_EQ(u3.finished[0].e2e_seconds, 1.0);
  EXPECT_EQ(t.num_tracked(), 0u);
}

TEST(request_timeline, counts_are_differences_of_cumulative_counts) {
  request_timeline t;
  t.on_added("a", 1, 0.0);
  EXPECT_EQ(t.on_outputs({out("a", 0, 4)}, 1.0).num_generation_tokens, 4);
  // The same cumulative count again (nothing new) adds nothing and times nothing.
  auto same = t.on_outputs({out("a", 0, 4)}, 2.0);
  EXPECT_EQ(same.num_generation_tokens, 0);
  EXPECT_TRUE(same.inter_token_latency.empty());
  EXPECT_EQ(t.on_outputs({out("a", 0, 7)}, 3.0).num_generation_tokens, 3);
}

TEST(request_timeline, a_request_with_n_choices_finishes_with_its_last_choice) {
  request_timeline t;
  t.on_added("a", 2, 0.0);
  auto u1 = t.on_outputs({out("a", 0, 1), out("a", 1, 1)}, 1.0);
  EXPECT_EQ(u1.num_prompt_tokens, 10);
  EXPECT_EQ(u1.num_generation_tokens, 2);
  EXPECT_EQ(u1.time_to_first_token.size(), 1u);
  auto u2 = t.on_outputs({out("a", 0, 2, finish_reason::stop), out("a", 1, 2)}, 2.0);
  EXPECT_TRUE(u2.finished.empty());
  EXPECT_EQ(u2.inter_token_latency, (std::vector<double>{1.0, 1.0}));
  auto u3 = t.on_outputs({out("a", 1, 5, finish_reason::length)}, 3.0);
  ASSERT_EQ(u3.finished.size(), 1u);
  EXPECT_EQ(u3.finished[0].num_generation_tokens, 7);
  EXPECT_EQ(u3.finished[0].reason, finish_reason::length);
}

TEST(request_timeline, an_abort_before_any_token_finishes_without_ttft) {
  request_timeline t;
  t.on_added("a", 1, 0.0);
  auto u = t.on_outputs({out("a", 0, 0, finish_reason::abort)}, 2.0);
  EXPECT_EQ(u.num_prompt_tokens, 0);
  EXPECT_TRUE(u.time_to_first_token.empty());
  ASSERT_EQ(u.finished.size(), 1u);
  EXPECT_EQ(u.finished[0].reason, finish_reason::abort);
  EXPECT_DOUBLE_EQ(u.finished[0].e2e_seconds, 2.0);
  // Never scheduled: no phase to time.
  EXPECT_FALSE(u.finished[0].inference_seconds);
  EXPECT_FALSE(u.finished[0].prefill_seconds);
}

TEST(request_timeline, phases_of_a_request_as_vllm_times_them) {
  request_timeline t;
  t.on_added("a", 1, 1.0);
  t.on_scheduled(plan_of({{"a", 0}}), 1.5);
  t.on_scheduled(plan_of({{"a", 0}}), 1.75);  // again after a preemption: not a new start
  t.on_outputs({out("a", 0, 1)}, 2.0);
  auto u = t.on_outputs({out("a", 0, 2, finish_reason::length)}, 3.0);
  ASSERT_EQ(u.finished.size(), 1u);
  EXPECT_DOUBLE_EQ(*u.finished[0].prefill_seconds, 0.5);
  EXPECT_DOUBLE_EQ(*u.finished[0].decode_seconds, 1.0);
  EXPECT_DOUBLE_EQ(*u.finished[0].inference_seconds, 1.5);

  // Aborted after its scheduling and before a token: inference time, no prefill or decode.
  t.on_added("b", 1, 4.0);
  t.on_scheduled(plan_of({{"b", 0}}), 4.5);
  auto v = t.on_outputs({out("b", 0, 0, finish_reason::abort)}, 5.0);
  ASSERT_EQ(v.finished.size(), 1u);
  EXPECT_DOUBLE_EQ(*v.finished[0].inference_seconds, 0.5);
  EXPECT_FALSE(v.finished[0].prefill_seconds);
  EXPECT_FALSE(v.finished[0].decode_seconds);
}

TEST(request_timeline, outputs_of_unknown_requests_still_count_tokens) {
  request_timeline t;
  auto u = t.on_outputs({out("x", 0, 3, finish_reason::stop)}, 5.0);
  EXPECT_EQ(u.num_generation_tokens, 3);
  EXPECT_EQ(u.num_prompt_tokens, 10);
  EXPECT_EQ(u.finished.size(), 1u);
  EXPECT_EQ(t.num_tracked(), 0u);
}

TEST(request_timeline, now_seconds_is_monotonic) {
  double a = now_seconds();
  double b = now_seconds();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace actorllm
