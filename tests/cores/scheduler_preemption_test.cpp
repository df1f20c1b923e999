// Preemption, swapping, fork and prefix sharing, checked against the fake model's oracle.
#include <gtest/gtest.h>

#include "actors/scheduler/scheduler.hpp"
#include "tests/cores/scheduler_harness.hpp"

namespace actorllm {
namespace {

using testing::harness;
using testing::make_params;
using testing::make_prompt;
using testing::small_options;

scheduler_options tight(preemption_mode mode, int32_t num_cpu_blocks) {
  scheduler_options o = small_options(4, num_cpu_blocks);  // 16 token slots
  o.scheduler.preemption = mode;
  o.enable_prefix_caching = false;
  return o;
}

TEST(SchedulerPreemption, RecomputeFreesTheLastArrivedAndKeepsItsTokens) {
  harness h(tight(preemption_mode::recompute, 0));
  h.add("a", make_prompt(7), make_params(9));
  h.add("b", make_prompt(7, 30), make_params(9));
  h.step();  // both prefill: 2 blocks each
  h.step();  // both decode in their second block
  EXPECT_EQ(h.sched.stats().num_preemptions, 0);
  step_plan p = h.step();  // a needs a third block: b goes
  EXPECT_EQ(h.sched.stats().num_preemptions, 1);
  std::vector<scheduler_event> events = h.sched.take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, scheduler_event::kind::preempted_by_recompute);
  EXPECT_EQ(events[0].request_id, "b");
  EXPECT_FALSE(events[0].swap_space_full);
  EXPECT_NE(to_string(events[0]).find("b"), std::string::npos);
  EXPECT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(h.sched.stats().num_waiting, 1);
  h.run();
  h.expect_reference("a");
  h.expect_reference("b");  // recomputed prompt + generated, then on as if nothing happened
  EXPECT_EQ(h.model.num_kv_errors(), 0);
  EXPECT_EQ(h.sched.blocks().stats().device.num_used, 0);
}

TEST(SchedulerPreemption, SwapMovesTheGroupOutAndBackNeverBothInOneStep) {
  harness h(tight(preemption_mode::swap, 8));
  h.add("a", make_prompt(7), make_params(9));
  h.add("b", make_prompt(7, 30), make_params(9));
  h.step();
  h.step();
  step_plan out = h.step();
  EXPECT_EQ(out.blocks_to_swap_out.size(), 2u);
  EXPECT_TRUE(out.blocks_to_swap_in.empty());
  std::vector<scheduler_event> events = h.sched.take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, scheduler_event::kind::preempted_by_swap);
  EXPECT_EQ(h.sched.stats().num_swapped, 1);
  EXPECT_EQ(h.sched.blocks().stats().cpu.num_used, 2);
  bool swapped_in = false;
  while (h.sched.has_work()) {
    step_plan p = h.step();
    if (!p.blocks_to_swap_in.empty()) {
      swapped_in = true;
      EXPECT_EQ(p.blocks_to_swap_in.size(), 2u);
      ASSERT_EQ(p.seqs.size(), 1u);  // b decodes in the step that brings it back
      EXPECT_TRUE(p.seqs[0].replace_table);
      EXPECT_EQ(p.seqs[0].new_block_ids.size(), 3u);
    }
  }
  EXPECT_TRUE(swapped_in);
  h.expect_reference("a");
  h.expect_reference("b");
  EXPECT_EQ(h.model.num_kv_errors(), 0);
  EXPECT_EQ(h.sched.blocks().stats().cpu.num_used, 0);
}

TEST(SchedulerPreemption, AFullCpuPoolFallsBackToRecompute) {
  harness h(tight(preemption_mode::swap, 1));
  h.add("a", make_prompt(7), make_params(9));
  h.add("b", make_prompt(7, 30), make_params(9));
  h.step();
  h.step();
  step_plan p = h.step();
  EXPECT_TRUE(p.blocks_to_swap_out.empty());
  std::vector<scheduler_event> events = h.sched.take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, scheduler_event::kind::preempted_by_recompute);
  EXPECT_TRUE(events[0].swap_space_full);
  h.run();
  h.expect_reference("b");
}

TEST(SchedulerPreemption, PriorityPolicyPreemptsTheLeastImportantNotTheLastArrived) {
  scheduler_options o = tight(preemption_mode::recompute, 0);
  o.scheduler.policy = scheduling_policy::priority;
  harness h(o);
  sampling_params low = make_params(9);
  low.priority = 5;
  sampling_params high = make_params(9);
  high.priority = 0;
  h.add("low", make_prompt(7), low);
  h.add("high", make_prompt(7, 30), high);
  step_plan first = h.step();
  ASSERT_EQ(first.new_seqs.size(), 2u);
  EXPECT_EQ(first.new_seqs[0].request_id, "high");  // admitted first despite arriving later
  h.step();
  h.step();
  std::vector<scheduler_event> events = h.sched.take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].request_id, "low");
  h.run();
  h.expect_reference("low");
  h.expect_reference("high");
}

TEST(SchedulerPreemption, PriorityPolicyAdmitsLowerValuesFirst) {
  scheduler_options o = small_options(16);
  o.scheduler.policy = scheduling_policy::priority;
  o.scheduler.max_num_seqs = 1;
  harness h(o);
  sampling_params p = make_params(2);
  for (int32_t prio : {3, 1, 2}) {
    p.priority = prio;
    h.add("p" + std::to_string(prio), make_prompt(3, prio * 10), p);
  }
  std::vector<std::string> order;
  while (h.sched.has_work()) {
    step_plan plan = h.step();
    for (const new_sequence& n : plan.new_seqs) order.push_back(n.request_id);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"p1", "p2", "p3"}));
  p.priority = -5;  // accepted under this policy, negative included
  EXPECT_FALSE(h.sched.add_request("neg", make_prompt(3, 50), p));
}

TEST(SchedulerPreemption, ALoneRequestThatOutgrowsTheCacheFinishesWithLength) {
  harness h(tight(preemption_mode::recompute, 0));
  h.add("big", make_prompt(10), make_params(20));
  h.run();
  std::vector<scheduler_event> events = h.sched.take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].what, scheduler_event::kind::out_of_kv_cache);
  // 16 slots: positions 10..15 computed after the prompt, so 7 tokens were sampled.
  EXPECT_EQ(h.output("big").token_ids.size(), 7u);
  EXPECT_EQ(h.output("big").finish, finish_reason::length);
  h.expect_reference_prefix("big");
}

TEST(SchedulerFork, NSamplesShareThePromptAndCopyItsLastBlockOnWrite) {
  harness h(small_options(16));
  h.add("a", make_prompt(6), make_params(4, 3));
  step_plan p1 = h.step();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].num_samples, 3);  // one prompt computation, three draws
  step_plan p2 = h.step();
  ASSERT_EQ(p2.new_seqs.size(), 2u);
  EXPECT_EQ(p2.new_seqs[0].index, 1);
  EXPECT_EQ(p2.new_seqs[1].index, 2);
  ASSERT_EQ(p2.seqs.size(), 3u);
  for (const scheduled_sequence& s : p2.seqs) {
    EXPECT_EQ(s.num_computed_tokens, 6);
    EXPECT_EQ(s.num_scheduled_tokens, 1);
  }
  EXPECT_EQ(p2.seqs[1].new_token_ids.size(), 7u);  // a child: prompt + its first token
  // The prompt's half-full last block is written by all three: two copies, one keeps it.
  EXPECT_EQ(p2.blocks_to_copy.size(), 2u);
  std::span<const block_id> t0 = h.sched.blocks().block_table(p2.seqs[0].seq);
  std::span<const block_id> t1 = h.sched.blocks().block_table(p2.seqs[1].seq);
  EXPECT_EQ(t0[0], t1[0]);
  EXPECT_NE(t0[1], t1[1]);
  h.run();
  h.expect_reference("a");
  EXPECT_EQ(h.model.num_kv_errors(), 0);
  EXPECT_EQ(h.sched.blocks().stats().device.num_used, 0);
}

TEST(SchedulerFork, ForkedGroupsSurviveRecomputeAndSwap) {
  for (preemption_mode mode : {preemption_mode::recompute, preemption_mode::swap}) {
    for (bool caching : {false, true}) {
      scheduler_options o = small_options(12, 12);
      o.scheduler.preemption = mode;
      o.enable_prefix_caching = caching;
      harness h(o);
      h.add("a", make_prompt(5), make_params(10, 2));
      h.add("b", make_prompt(6, 40), make_params(10, 2));
      h.run();
      EXPECT_GT(h.sched.stats().num_preemptions, 0);
      h.expect_reference("a");
      h.expect_reference("b");
      EXPECT_EQ(h.model.num_kv_errors(), 0);
      EXPECT_EQ(h.sched.blocks().stats().device.num_used, 0);
      EXPECT_EQ(h.sched.blocks().stats().cpu.num_used, 0);
    }
  }
}

TEST(SchedulerPrefixCache, ASharedPrefixIsComputedOnceAndChangesNoOutput) {
  std::vector<int32_t> shared = make_prompt(32);
  std::vector<int32_t> a = shared, b = shared;
  a.insert(a.end(), {1, 2, 3, 4});
  b.insert(b.end(), {5, 6, 7, 8});

  harness alone(small_options(64));
  alone.add("b", b, make_params(8));
  alone.run();

  harness h(small_options(64));
  h.add("a", a, make_params(8));
  h.add("b", b, make_params(8));
  step_plan p = h.step();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].num_computed_tokens, 32);  // b starts after the shared prefix
  EXPECT_EQ(p.seqs[1].num_scheduled_tokens, 4);
  EXPECT_EQ(p.num_scheduled_tokens, 36 + 4);
  EXPECT_EQ(h.sched.stats().prefix_cache_queries, 72);
  EXPECT_EQ(h.sched.stats().prefix_cache_hits, 32);
  h.run();
  EXPECT_EQ(h.output("b").token_ids, alone.output("b").token_ids);
  // Twice the work of one request, less the 32 prefix tokens b did not compute.
  EXPECT_EQ(h.model.num_computed_tokens(), 2 * alone.model.num_computed_tokens() - 32);
  h.expect_reference("a");
  h.expect_reference("b");
  EXPECT_EQ(h.model.num_kv_errors(), 0);
}

TEST(SchedulerPrefixCache, ALaterRequestHitsTheBlocksOfAFinishedOne) {
  harness h(small_options(64));
  h.add("a", make_prompt(20), make_params(3));
  h.run();
  h.add("b", make_prompt(20), make_params(3));
  step_plan p = h.step();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].num_computed_tokens, 16);
  EXPECT_EQ(p.seqs[0].num_scheduled_tokens, 4);
  h.run();
  EXPECT_EQ(h.output("b").token_ids, h.output("a").token_ids);
  h.expect_reference("b");
}

}  // namespace
}  // namespace actorllm
