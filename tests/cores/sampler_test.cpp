// The sampler's rules, one test each, plus a frequency check of the plain draw.
#include "actors/gpu_worker/sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/kernel_isa.hpp"
#include "tests/support/kernel_isa.hpp"

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

TEST(sampler, argmax_is_the_first_index_of_the_largest_value_at_any_length) {
  // The slow, obvious answer: one pass, the first strictly larger value wins, NaN never does.
  auto oracle = [](const std::vector<float>& x) {
    int32_t best = 0;
    for (size_t i = 1; i < x.size(); ++i)
      if (x[i] > x[best] || std::isnan(x[best])) best = static_cast<int32_t>(i);
    return std::isnan(x[best]) ? 0 : best;
  };
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (size_t n : {1, 15, 16, 17, 33, 32000, 32007}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> x(n);
      for (auto& v : x) v = std::round(normal(rng) * 4) / 4;  // coarse: many ties
      if (trial % 4 == 1) x[rng() % n] = std::nanf("");       // a NaN anywhere is passed over
      if (trial % 4 == 2) x[n - 1] = 100.0f;                  // the largest in the tail
      if (trial % 4 == 3) std::fill(x.begin(), x.end(), -INFINITY);
      for (cpu::kernel_isa isa : {cpu::kernel_isa::avx2, cpu::kernel_isa::avx512}) {
        if (!cpu::cpu_runs(isa)) continue;
        const testing::scoped_kernel_isa use(isa);
        EXPECT_EQ(argmax(x), oracle(x)) << n << " " << trial << " " << cpu::to_string(isa);
      }
    }
  }
  const std::vector<float> ties{1.0f, 5.0f, 2.0f, 5.0f};
  EXPECT_EQ(argmax(ties), 1);  // the first of equal maxima
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

TEST(sampler, top_k_top_p_and_min_p_keep_both_survivors_in_proportion) {
  // Probabilities 0.2, 0.4, 0.1, 0.3 (no cut may assume sorted ids): each cut keeps tokens 1
  // (0.4) and 3 (0.3) and draws them as 4 : 3, the kept mass renormalized.
  const auto logits = logits_of({0.2, 0.4, 0.1, 0.3});
  sampling_params k2;
  k2.top_k = 2;
  sampling_params p065;
  p065.top_p = 0.65f;  // 0.4 + 0.3 reaches it: two candidates
  sampling_params m06;
  m06.min_p = 0.6f;  // keeps p >= 0.6 * 0.4 = 0.24: tokens 1 and 3
  const int n = 4000;
  for (const auto& [name, params] :
       {std::pair{"top_k 2", k2}, std::pair{"top_p 0.65", p065}, std::pair{"min_p 0.6", m06}}) {
    std::vector<int> counts(4);
    for (int seed = 0; seed < n; ++seed) {
      sampler_state st(seed);  // a fresh generator each draw: many seeds, not one stream
      ++counts[draw(logits, params, st)];
    }
    EXPECT_EQ(counts[0], 0) << name;
    EXPECT_EQ(counts[2], 0) << name;
    EXPECT_GT(counts[1], 0) << name;
    EXPECT_GT(counts[3], 0) << name;
    // 4/7 = 0.571; the standard error of n = 4000 draws is 0.008.
    EXPECT_NEAR(counts[1] / double(n), 4.0 / 7, 0.04) << name;
  }
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
  EXPECT_EQ(r.logprob.token_id, 0);
  ASSERT_EQ(r.logprob.top_ids.size(), 2u);
  ASSERT_EQ(r.logprob.top_logprobs.size(), 2u);
  EXPECT_EQ(r.logprob.top_ids[0], 0);
  EXPECT_EQ(r.logprob.top_ids[1], 1);  // tokens 1 and 2 tie at 0.25: the lower id first
  EXPECT_NEAR(r.logprob.top_logprobs[0], std::log(0.5), 1e-5);
  EXPECT_NEAR(r.logprob.top_logprobs[1], std::log(0.25), 1e-5);
}

}  // namespace
}  // namespace actorllm
