#include "actors/scheduler/scheduler.hpp"

#include <gtest/gtest.h>

#include "tests/cores/scheduler_harness.hpp"

namespace actorllm {
namespace {

using testing::harness;
using testing::make_params;
using testing::make_prompt;
using testing::small_options;

/// Every sampling sequence of `plan` draws `token` (num_samples times).
step_result sample_all(const step_plan& plan, int32_t token) {
  step_result result;
  result.step = plan.step;
  for (const scheduled_sequence& s : plan.seqs) {
    if (s.num_samples == 0) continue;
    result.seqs.push_back(
        {s.seq, std::vector<int32_t>(s.num_samples, token), {}, {}, {}, {}, 0, {}});
  }
  return result;
}

TEST(SchedulerAdmission, RejectsWhatCanNeverRunWithAClearError) {
  scheduler_options o = small_options(8);  // 8 blocks of 4 tokens
  o.scheduler.max_waiting_requests = 2;
  scheduler s(o);
  using code = admission_error::code;
  auto kind_of = [&](const std::string& id, std::vector<int32_t> prompt, sampling_params p) {
    auto error = s.add_request(id, std::move(prompt), p);
    EXPECT_TRUE(!error || !error->message.empty());
    return error ? std::optional<code>(error->kind) : std::nullopt;
  };
  EXPECT_EQ(kind_of("a", {}, make_params(4)), code::empty_prompt);
  EXPECT_EQ(kind_of("a", make_prompt(64), make_params(4)), code::prompt_too_long);
  EXPECT_EQ(kind_of("a", make_prompt(33), make_params(4)), code::exceeds_kv_cache);
  EXPECT_EQ(kind_of("a", make_prompt(4), make_params(4, 0)), code::invalid_params);
  EXPECT_EQ(kind_of("a", make_prompt(4), make_params(0)), code::invalid_params);
  sampling_params urgent = make_params(4);
  urgent.priority = -1;  // means nothing first come, first served: refused, not ignored
  EXPECT_EQ(kind_of("a", make_prompt(4), urgent), code::invalid_params);
  EXPECT_EQ(kind_of("a", make_prompt(32), make_params(4)), std::nullopt);
  EXPECT_EQ(kind_of("a", make_prompt(4), make_params(4)), code::duplicate_request_id);
  EXPECT_EQ(kind_of("b", make_prompt(4), make_params(4)), std::nullopt);
  EXPECT_EQ(kind_of("c", make_prompt(4), make_params(4)), code::queue_full);
  EXPECT_EQ(s.stats().num_waiting, 2);
}

TEST(Scheduler, NewRequestsAreSentInFullOnceThenOnlyDiffs) {
  scheduler s(small_options(8));
  std::vector<int32_t> prompt = make_prompt(5);
  ASSERT_FALSE(s.add_request("a", prompt, make_params(3)));

  step_plan p1 = s.schedule();
  ASSERT_EQ(p1.new_seqs.size(), 1u);
  EXPECT_EQ(p1.new_seqs[0].request_id, "a");
  EXPECT_EQ(p1.new_seqs[0].num_prompt_tokens, 5);
  ASSERT_EQ(p1.seqs.size(), 1u);
  const scheduled_sequence& first = p1.seqs[0];
  EXPECT_EQ(first.seq, p1.new_seqs[0].seq);
  EXPECT_EQ(first.num_computed_tokens, 0);
  EXPECT_EQ(first.num_scheduled_tokens, 5);
  EXPECT_EQ(first.num_samples, 1);
  EXPECT_EQ(first.new_token_ids, prompt);
  EXPECT_TRUE(first.replace_table);
  EXPECT_EQ(first.new_block_ids.size(), 2u);
  EXPECT_EQ(p1.num_scheduled_tokens, 5);
  std::vector<request_output> out = s.update(sample_all(p1, 7));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].request_id, "a");
  EXPECT_EQ(out[0].token_ids, std::vector<int32_t>{7});
  EXPECT_EQ(out[0].finish, finish_reason::none);
  EXPECT_EQ(out[0].num_prompt_tokens, 5);

  step_plan p2 = s.schedule();
  EXPECT_TRUE(p2.new_seqs.empty());
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].num_computed_tokens, 5);
  EXPECT_EQ(p2.seqs[0].num_scheduled_tokens, 1);
  EXPECT_TRUE(p2.seqs[0].new_token_ids.empty());  // the workers kept their sample, 7
  EXPECT_FALSE(p2.seqs[0].replace_table);
  EXPECT_TRUE(p2.seqs[0].new_block_ids.empty());  // position 5 is in block 1
  s.update(sample_all(p2, 8));

  step_plan p3 = s.schedule();
  EXPECT_EQ(p3.seqs[0].num_computed_tokens, 6);
  out = s.update(sample_all(p3, 9));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finish, finish_reason::length);
  EXPECT_EQ(out[0].num_generated_tokens, 3);
  EXPECT_EQ(s.blocks().stats().device.num_used, 0);

  ASSERT_TRUE(s.has_work());  // the finished id must still reach the workers
  step_plan p4 = s.schedule();
  EXPECT_TRUE(p4.empty());
  EXPECT_EQ(p4.finished_seq_ids, std::vector<seq_id>{first.seq});
  s.update(sample_all(p4, 7));
  EXPECT_FALSE(s.has_work());
}

TEST(Scheduler, ANewBlockIdIsSentWhenTheTableGrows) {
  scheduler s(small_options(8));
  ASSERT_FALSE(s.add_request("a", make_prompt(4), make_params(3)));
  step_plan p1 = s.schedule();
  EXPECT_EQ(p1.seqs[0].new_block_ids.size(), 1u);
  s.update(sample_all(p1, 7));
  step_plan p2 = s.schedule();  // position 4 opens block 1
  ASSERT_EQ(p2.seqs[0].new_block_ids.size(), 1u);
  EXPECT_FALSE(p2.seqs[0].replace_table);
  EXPECT_EQ(p2.seqs[0].new_block_ids[0], s.blocks().block_table(p2.seqs[0].seq)[1]);
  s.update(sample_all(p2, 7));
}

TEST(Scheduler, LongPromptsArePrefilledInChunksWithinTheTokenBudget) {
  scheduler_options o = small_options(8);
  o.scheduler.max_num_batched_tokens = 4;
  scheduler s(o);
  ASSERT_FALSE(s.add_request("a", make_prompt(10), make_params(2)));
  std::vector<int32_t> chunks, starts, samples;
  for (int step = 0; step < 3; ++step) {
    step_plan p = s.schedule();
    ASSERT_EQ(p.seqs.size(), 1u);
    starts.push_back(p.seqs[0].num_computed_tokens);
    chunks.push_back(p.seqs[0].num_scheduled_tokens);
    samples.push_back(p.seqs[0].num_samples);
    std::vector<request_output> out = s.update(sample_all(p, 7));
    EXPECT_EQ(out.size(), step == 2 ? 1u : 0u);  // no token before the prompt is done
  }
  EXPECT_EQ(starts, (std::vector<int32_t>{0, 4, 8}));
  EXPECT_EQ(chunks, (std::vector<int32_t>{4, 4, 2}));
  EXPECT_EQ(samples, (std::vector<int32_t>{0, 0, 1}));
}

TEST(Scheduler, RunningRequestsComeFirstAndTheRestOfTheBudgetAdmitsNewOnes) {
  scheduler_options o = small_options(16);
  o.scheduler.max_num_batched_tokens = 4;
  scheduler s(o);
  ASSERT_FALSE(s.add_request("a", make_prompt(3), make_params(5)));
  ASSERT_FALSE(s.add_request("b", make_prompt(3, 50), make_params(5)));
  step_plan p1 = s.schedule();
  ASSERT_EQ(p1.seqs.size(), 2u);
  EXPECT_EQ(p1.seqs[0].num_scheduled_tokens, 3);  // a
  EXPECT_EQ(p1.seqs[1].num_scheduled_tokens, 1);  // b: a chunk of what is left
  EXPECT_EQ(p1.seqs[1].num_samples, 0);
  s.update(sample_all(p1, 7));
  step_plan p2 = s.schedule();
  ASSERT_EQ(p2.seqs.size(), 2u);
  EXPECT_EQ(p2.seqs[0].num_scheduled_tokens, 1);  // a decodes
  EXPECT_EQ(p2.seqs[1].num_scheduled_tokens, 2);  // b finishes its prompt
  EXPECT_EQ(p2.num_scheduled_tokens, 3);
  s.update(sample_all(p2, 7));
}

TEST(Scheduler, MaxNumSeqsBoundsTheBatch) {
  scheduler_options o = small_options(16);
  o.scheduler.max_num_seqs = 2;
  scheduler s(o);
  for (std::string id : {"a", "b", "c"})
    ASSERT_FALSE(s.add_request(id, make_prompt(2), make_params(4)));
  step_plan p = s.schedule();
  EXPECT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(s.stats().num_running, 2);
  EXPECT_EQ(s.stats().num_waiting, 1);
  s.update(sample_all(p, 7));
}

struct stop_case {
  sampling_params params;
  std::vector<int32_t> tokens;  // sampled one per step
  int32_t num_expected;         // outputs until the finish
  finish_reason finish;
  int32_t stop_token;  // -1: none
};

class SchedulerStop : public ::testing::TestWithParam<stop_case> {};

TEST_P(SchedulerStop, FinishesByTheRules) {
  const stop_case& c = GetParam();
  scheduler s(small_options(16));
  ASSERT_FALSE(s.add_request("a", make_prompt(3), c.params));
  std::vector<int32_t> got;
  request_output last;
  for (int32_t token : c.tokens) {
    step_plan p = s.schedule();
    if (p.seqs.empty()) break;
    for (const request_output& o : s.update(sample_all(p, token))) {
      got.insert(got.end(), o.token_ids.begin(), o.token_ids.end());
      last = o;
    }
    if (last.finish != finish_reason::none) break;
  }
  EXPECT_EQ(int32_t(got.size()), c.num_expected);
  EXPECT_EQ(last.finish, c.finish);
  EXPECT_EQ(last.stop_token, c.stop_token);
  EXPECT_EQ(last.stop_reason, "");  // stop strings are the router's
}

sampling_params with(int32_t max_tokens, bool ignore_eos, int32_t min_tokens,
                     std::vector<int32_t> stop_ids) {
  sampling_params p = make_params(max_tokens, 1, ignore_eos);
  p.min_tokens = min_tokens;
  p.stop_token_ids = std::move(stop_ids);
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, SchedulerStop,
    ::testing::Values(
        // EOS (id 0) stops and is part of the output.
        stop_case{with(10, false, 0, {}), {5, 0, 5}, 2, finish_reason::stop, -1},
        // ignore_eos: generation goes on to max_tokens.
        stop_case{with(3, true, 0, {}), {0, 0, 0, 0}, 3, finish_reason::length, -1},
        // min_tokens: the first two EOS do not count.
        stop_case{with(10, false, 2, {}), {0, 0, 0}, 3, finish_reason::stop, -1},
        // stop_token_ids: the reason is the token id.
        stop_case{with(10, true, 0, {42}), {5, 42}, 2, finish_reason::stop, 42},
        // stop ids obey min_tokens too.
        stop_case{with(10, true, 1, {42}), {42, 42}, 2, finish_reason::stop, 42},
        // max_tokens -1: until the context (64 tokens) is full: 61 outputs after a 3-token
        // prompt.
        stop_case{with(-1, true, 0, {}), std::vector<int32_t>(70, 5), 61, finish_reason::length,
                  -1}));

TEST(Scheduler, AbortFreesEverythingFromAnyQueue) {
  scheduler_options o = small_options(4, 8);
  o.scheduler.preemption = preemption_mode::swap;
  o.enable_prefix_caching = false;
  scheduler s(o);
  EXPECT_TRUE(s.abort("nobody").empty());

  ASSERT_FALSE(s.add_request("waiting", make_prompt(3), make_params(4)));
  std::vector<request_output> out = s.abort("waiting");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].finish, finish_reason::abort);
  EXPECT_TRUE(s.abort("waiting").empty());

  // Two requests fill the 4 blocks; the second is swapped out when the first grows.
  ASSERT_FALSE(s.add_request("a", make_prompt(7), make_params(10)));
  ASSERT_FALSE(s.add_request("b", make_prompt(7, 50), make_params(10)));
  seq_id b_seq = -1;
  for (int i = 0; i < 3; ++i) {
    step_plan p = s.schedule();
    if (i == 0) b_seq = p.seqs.at(1).seq;
    s.update(sample_all(p, 7));
  }
  ASSERT_EQ(s.stats().num_swapped, 1);
  EXPECT_GT(s.blocks().stats().cpu.num_used, 0);
  EXPECT_EQ(s.abort("b").size(), 1u);
  EXPECT_EQ(s.blocks().stats().cpu.num_used, 0);
  s.check_invariants();

  // Abort while a step is in flight: its result for the request is ignored.
  step_plan p = s.schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.finished_seq_ids, std::vector<seq_id>{b_seq});
  EXPECT_EQ(s.abort("a").size(), 1u);
  EXPECT_EQ(s.blocks().stats().device.num_used, 0);
  EXPECT_TRUE(s.update(sample_all(p, 7)).empty());
  s.check_invariants();
  step_plan last = s.schedule();
  EXPECT_EQ(last.finished_seq_ids, std::vector<seq_id>{p.seqs[0].seq});
  s.update(sample_all(last, 7));
  EXPECT_FALSE(s.has_work());
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

prompt_image image_at(int32_t offset, int32_t num_tokens) {
  prompt_image image;
  image.offset = offset;
  image.num_tokens = num_tokens;
  image.token_id = 3;
  image.channels = image.height = image.width = 1;
  image.pixels = {0.5f};
  return image;
}

TEST(SchedulerImages, AChunkNeverEndsInsideAnImageAttendedBothWays) {
  scheduler_options o = testing::small_options(16);
  o.whole_images = true;
  o.scheduler.max_num_batched_tokens = 8;
  scheduler s(o);
  // 20 tokens, an image at 6..11: a first chunk of 8 would end inside it.
  ASSERT_FALSE(
      s.add_request("a", testing::make_prompt(20), testing::make_params(2), {image_at(6, 6)}));
  step_plan p1 = s.schedule();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].num_scheduled_tokens, 6);  // cut back to the image's start
  ASSERT_EQ(p1.new_seqs.size(), 1u);
  EXPECT_EQ(p1.new_seqs[0].images.size(), 1u);  // the workers learn the image with the sequence
  s.update(sample_all(p1, 7));
  step_plan p2 = s.schedule();
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].num_computed_tokens, 6);
  EXPECT_EQ(p2.seqs[0].num_scheduled_tokens, 8);  // the whole image, and past it

  // An image larger than a step's budget could never run: refused at admission.
  const auto refused =
      s.add_request("b", testing::make_prompt(20), testing::make_params(2), {image_at(2, 9)});
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->message.find("--max-num-batched-tokens 8"), std::string::npos)
      << refused->message;

  // Without the option a chunk cuts through images (LLaVA's run row by row).
  scheduler_options causal = o;
  causal.whole_images = false;
  scheduler c(causal);
  ASSERT_FALSE(
      c.add_request("a", testing::make_prompt(20), testing::make_params(2), {image_at(6, 6)}));
  EXPECT_EQ(c.schedule().seqs[0].num_scheduled_tokens, 8);
}

}  // namespace
}  // namespace actorllm
