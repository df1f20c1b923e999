// The sampler's rules, one test each, plus a frequency check of the plain draw.
#include "actors/gpu_worker/sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace actorllm {
namespace {

std::vector<float> logits_of(std::vector<double> probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

int32_t draw(std::vector<float> logits, const sampling_params& p, sampler_state& st) {
  sampler s;
  return s.sample(logits, p, {}, st).token_id;
}

TEST(sampler, greedy_takes_the_argmax) {
  sampling_params p;
  p.temperature = 0;
  sampler_state st(1);
  EXPECT_EQ(draw({0.1f, 3.0f, -2.0f, 2.9f}, p, st), 1);
}

TEST(sampler, same_seed_same_tokens_and_different_seeds_differ) {
  sampling_params p;
  p.temperature = 1.0f;
  const auto logits = logits_of(std::vector<double>(50, 1.0 / 50));
  auto run = [&](uint64_t seed) {
    sampler_state st(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 20; ++i) out.push_back(draw(logits, p, st));
    return out;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(sampler, draws_follow_the_distribution) {
  sampling_params p;
  const auto logits = logits_of({0.5, 0.3, 0.2});
  sampler_state st(3);
  std::vector<int> counts(3);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[draw(logits, p, st)];
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.02);
}

TEST(sampler, top_k_top_p_and_min_p_cut_the_tail) {
  const auto logits = logits_of({0.4, 0.3, 0.2, 0.1});
  sampler_state st(5);
  sampling_params k2;
  k2.top_k = 2;
  sampling_params p05;
  p05.top_p = 0.65f;  // 0.4 + 0.3 reaches it: two candidates
  sampling_params m;
  m.min_p = 0.6f;  // keeps p >= 0.24: tokens 0 and 1
  for (const auto& params : {k2, p05, m})
    for (int i = 0; i < 500; ++i) EXPECT_LT(draw(logits, params, st), 2);
}

TEST(sampler, temperature_sharpens) {
  const auto logits = logits_of({0.6, 0.4});
  sampling_params cold;
  cold.temperature = 0.1f;
  sampler_state st(9);
  int zeros = 0;
  for (int i = 0; i < 2000; ++i) zeros += draw(logits, cold, st) == 0;
  EXPECT_GT(zeros, 1950);  // (0.6/0.4)^10 ≈ 58:1
}

TEST(sampler, penalties_follow_vllm_semantics) {
  std::vector<float> logits{2.0f, -2.0f, 1.0f, 0.5f};
  sampling_params p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  p.logit_bias = {{3, 10.0f}};
  const std::vector<int32_t> prompt{0, 1};
  apply_penalties(logits, p, prompt, {{2, 2}});
  EXPECT_FLOAT_EQ(logits[0], 1.0f);                    // 2 / 2
  EXPECT_FLOAT_EQ(logits[1], -4.0f);                   // -2 * 2
  EXPECT_FLOAT_EQ(logits[2], 1.0f / 2 - 0.5f - 0.5f);  // repetition, then presence + 2 * 0.25
  EXPECT_FLOAT_EQ(logits[3], 10.5f);                   // bias only
}

TEST(sampler, logit_bias_can_force_a_token) {
  sampling_params p;
  p.temperature = 0;
  p.logit_bias = {{2, 100.0f}};
  sampler_state st(1);
  EXPECT_EQ(draw({5.0f, 4.0f, 0.0f}, p, st), 2);
}

TEST(sampler, logprobs_of_chosen_and_top_n) {
  sampling_params p;
  p.temperature = 0;
  p.logprobs = 2;
  sampler_state st(1);
  sampler s;
  auto logits = logits_of({0.5, 0.25, 0.25});
  const auto r = s.sample(logits, p, {}, st);
  EXPECT_EQ(r.token_id, 0);
  EXPECT_NEAR(r.logprob.logprob, std::log(0.5), 1e-5);
  ASSERT_EQ(r.logprob.top_ids.size(), 2u);
  EXPECT_EQ(r.logprob.top_ids[0], 0);
  EXPECT_NEAR(r.logprob.top_logprobs[1], std::log(0.25), 1e-5);
}

}  // namespace
}  // namespace actorllm
