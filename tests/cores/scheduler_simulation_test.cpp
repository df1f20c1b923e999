// A randomized simulation: thousands of steps of random arrivals, lengths, n > 1 and aborts
// on a pool small enough to force preemption, checked after every step (the scheduler's and
// block manager's invariants, and the fake model's KV reads) and at the end (every request
// finished or aborted with exactly its unscheduled output, every block free). Each case runs
// with plain steps and with every step planned ahead of the one in flight where it can be.
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <random>
#include <set>

#include "actors/scheduler/scheduler.hpp"
#include "tests/cores/scheduler_harness.hpp"

namespace actorllm {
namespace {

using testing::harness;

struct simulation_case {
  preemption_mode mode;
  bool prefix_caching;
  scheduling_policy policy;
  uint64_t seed;
  bool ahead;             // asynchronous scheduling: a second plan queued behind the one in flight
  int32_t window = 0;     // a sliding-window model: blocks behind the window are released
  int32_t speculate = 0;  // speculative decoding: drafts per step (the fake model proposes)
};

std::string name_of(const ::testing::TestParamInfo<simulation_case>& info) {
  const simulation_case& c = info.param;
  return std::string(to_string(c.mode)) + (c.prefix_caching ? "_caching_" : "_nocache_") +
         to_string(c.policy) + (c.ahead ? "_ahead_" : "_") +
         (c.window > 0 ? "window" + std::to_string(c.window) + "_" : "") +
         (c.speculate > 0 ? "spec" + std::to_string(c.speculate) + "_" : "") +
         std::to_string(c.seed);
}

class SchedulerSimulation : public ::testing::TestWithParam<simulation_case> {};

TEST_P(SchedulerSimulation, EveryRequestGetsExactlyItsOutput) {
  const simulation_case& c = GetParam();
  // A windowed sequence holds at most 7 blocks (an 18-token window and a block planned
  // ahead), so its pool is halved for the same pressure.
  scheduler_options o =
      testing::small_options(c.window > 0 ? 24 : 48, c.mode == preemption_mode::swap ? 20 : 0);
  // 48 blocks of 4: one request with n = 3 at max_model_len (64) fits alone, a dozen do not.
  o.scheduler.preemption = c.mode;
  o.scheduler.policy = c.policy;
  o.scheduler.max_num_batched_tokens = 24;
  o.scheduler.max_num_seqs = 8;
  o.scheduler.max_waiting_requests = 1000;
  o.enable_prefix_caching = c.prefix_caching;
  o.sliding_window = c.window;
  if (c.speculate > 0) {
    o.speculative.method = speculative_method::ngram;  // the fake model's proposals stand in
    o.speculative.num_speculative_tokens = c.speculate;
  }
  harness h(o);
  std::mt19937_64 rng(c.seed);
  auto uniform = [&rng](int32_t lo, int32_t hi) {
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };

  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> prefix(uniform(8, 24));
    for (int32_t& t : prefix) t = uniform(2, testing::fake_vocab_size - 1);
    prefixes.push_back(prefix);
  }
  const int32_t num_requests = 500;
  std::vector<std::string> ids;
  int64_t num_swap_outs = 0;
  auto abort_random = [&] {
    if (ids.empty()) return;
    h.record(h.sched.abort(ids[uniform(0, int32_t(ids.size()) - 1)]));
    h.sched.check_invariants();
  };

  std::deque<step_plan> in_flight;  // executed by the fake model in order, as a worker does
  int64_t num_planned_ahead = 0, num_tokens_computed_ahead = 0;
  int32_t step = 0;
  for (; step < 50000 &&
         (int32_t(ids.size()) < num_requests || h.sched.has_work() || !in_flight.empty());
       ++step) {
    if (int32_t(ids.size()) < num_requests && uniform(0, 2) == 0) {
      for (int k = uniform(1, 2); k > 0; --k) {
        std::vector<int32_t> prompt;
        if (uniform(0, 1) == 0) prompt = prefixes[uniform(0, 3)];
        for (int32_t n = uniform(1, 16); n > 0; --n) prompt.push_back(uniform(2, 49));
        sampling_params p;
        p.max_tokens = uniform(0, 9) == 0 ? -1 : uniform(1, 30);
        p.n = uniform(0, 9) < 7 ? 1 : uniform(2, 3);
        p.ignore_eos = uniform(0, 9) < 3;
        p.min_tokens = uniform(0, 3);
        if (uniform(0, 4) == 0) p.stop_token_ids = {1};
        const int32_t priority = uniform(0, 3);  // drawn under both: the same random stream
        if (c.policy == scheduling_policy::priority) p.priority = priority;  // fcfs refuses one
        if (uniform(0, 9) == 0) p.logprobs = 0;
        ids.push_back("r" + std::to_string(ids.size()));
        h.add(ids.back(), prompt, p);
      }
    }
    if (uniform(0, 49) == 0) abort_random();

    if (in_flight.empty()) in_flight.push_back(h.sched.schedule());
    if (c.ahead && in_flight.size() == 1) {
      if (auto ahead = h.sched.schedule_ahead()) {
        ++num_planned_ahead;
        // A sequence that samples in the step in flight and computes again in this one
        // computes the token being drawn.
        std::set<seq_id> drawing;
        for (const scheduled_sequence& s : in_flight.front().seqs)
          if (s.num_samples > 0) drawing.insert(s.seq);
        for (const scheduled_sequence& s : ahead->seqs)
          num_tokens_computed_ahead += drawing.count(s.seq);
        in_flight.push_back(std::move(*ahead));
      }
    }
    ASSERT_EQ(h.sched.num_steps_in_flight(), int32_t(in_flight.size()));
    h.sched.check_invariants();
    const step_plan& plan = in_flight.back();
    ASSERT_TRUE(plan.blocks_to_swap_in.empty() || plan.blocks_to_swap_out.empty());
    ASSERT_LE(plan.num_scheduled_tokens, o.scheduler.max_num_batched_tokens);
    ASSERT_LE(int32_t(plan.seqs.size()), o.scheduler.max_num_seqs);
    num_swap_outs += int64_t(plan.blocks_to_swap_out.size());
    if (uniform(0, 49) == 0) abort_random();  // while the steps are in flight
    step_result result = h.model.run(in_flight.front());
    in_flight.pop_front();
    h.record(h.sched.update(result));
    h.sched.check_invariants();
    ASSERT_EQ(h.model.num_kv_errors(), 0) << "step " << step;
    pool_stats device = h.sched.blocks().stats().device;
    ASSERT_EQ(device.num_used + device.num_free + device.num_cached, device.num_blocks);
  }
  EXPECT_FALSE(h.sched.has_work()) << "stuck after " << step << " steps";
  EXPECT_GT(step, c.speculate > 0 ? 500 : 1000);  // accepted drafts save steps

  for (const std::string& id : ids) h.expect_consistent(id);
  block_manager_stats blocks = h.sched.blocks().stats();
  EXPECT_EQ(blocks.device.num_used, 0);
  EXPECT_EQ(blocks.cpu.num_used, 0);
  EXPECT_EQ(blocks.device.num_free + blocks.device.num_cached, blocks.device.num_blocks);
  EXPECT_EQ(h.model.mirror().num_sequences(), 0);  // the workers forgot every sequence

  if (c.speculate > 0) {
    // Drafts verified, some accepted and some not; a step that verifies waits for the one
    // before, so fewer go out ahead.
    const speculation_stats spec = h.sched.stats().speculation;
    std::printf("%lld verifications, %lld/%lld drafts accepted\n", (long long)spec.num_drafts,
                (long long)spec.num_accepted_tokens, (long long)spec.num_draft_tokens);
    EXPECT_GT(spec.num_accepted_tokens, 0);
    EXPECT_LT(spec.num_accepted_tokens, spec.num_draft_tokens);
    EXPECT_LE(spec.num_draft_tokens, h.model.num_drafts_proposed());
  } else if (c.ahead) {
    // Most steps went out ahead, most of their decodes computing a token still being drawn.
    std::printf("%lld plans ahead, %lld tokens computed before they were known\n",
                (long long)num_planned_ahead, (long long)num_tokens_computed_ahead);
    EXPECT_GT(num_planned_ahead, step / 2);
    EXPECT_GT(num_tokens_computed_ahead, num_planned_ahead);
  }
  scheduler_stats stats = h.sched.stats();
  std::printf("%d steps, %lld preemptions, %lld blocks swapped out, %lld/%lld prefix tokens hit\n",
              step, (long long)stats.num_preemptions, (long long)num_swap_outs,
              (long long)stats.prefix_cache_hits, (long long)stats.prefix_cache_queries);
  EXPECT_GT(stats.num_preemptions, 0);
  if (c.mode == preemption_mode::swap) {
    EXPECT_GT(num_swap_outs, 0);
  }
  if (c.prefix_caching) {
    EXPECT_GT(stats.prefix_cache_hits, 0);
  }
  for (const scheduler_event& e : h.sched.take_events()) {
    EXPECT_NE(e.what, scheduler_event::kind::out_of_kv_cache) << to_string(e);
  }
}

std::vector<simulation_case> all_cases() {
  std::vector<simulation_case> cases;
  uint64_t seed = 1;
  for (preemption_mode mode : {preemption_mode::recompute, preemption_mode::swap}) {
    for (bool caching : {true, false}) {
      for (scheduling_policy policy : {scheduling_policy::fcfs, scheduling_policy::priority}) {
        for (bool ahead : {false, true}) cases.push_back({mode, caching, policy, seed++, ahead});
      }
    }
  }
  // A windowed model (18 tokens over blocks of 4: windows start mid-block; wide enough that
  // the pool still runs short). Seeds of their own, so the cases above keep theirs.
  seed = 101;
  for (preemption_mode mode : {preemption_mode::recompute, preemption_mode::swap}) {
    for (bool ahead : {false, true})
      cases.push_back({mode, true, scheduling_policy::fcfs, seed++, ahead, 18});
  }
  // Speculative decoding, with and without a window.
  seed = 201;
  for (preemption_mode mode : {preemption_mode::recompute, preemption_mode::swap}) {
    for (bool ahead : {false, true}) {
      cases.push_back({mode, true, scheduling_policy::fcfs, seed++, ahead, 0, 3});
      cases.push_back({mode, false, scheduling_policy::priority, seed++, ahead, 18, 2});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Random, SchedulerSimulation, ::testing::ValuesIn(all_cases()), name_of);

}  // namespace
}  // namespace actorllm
