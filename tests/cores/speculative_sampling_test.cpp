// Speculative decoding's pure parts: the n-gram proposer, --speculative-config, and the
// sampler's verification of drafts: exact under greedy, and under sampling a chi-square test
// that every emitted token is distributed as the target's own draw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "actors/gpu_worker/ngram_proposer.hpp"
#include "actors/gpu_worker/sampler.hpp"
#include "config/engine_config.hpp"

namespace actorllm {
namespace {

std::vector<int32_t> proposals(const std::vector<int32_t>& tokens, int32_t k, int32_t min_n,
                               int32_t max_n) {
  std::vector<int32_t> drafts;
  propose_ngram(tokens, k, ngram_options{min_n, max_n}, drafts);
  return drafts;
}

TEST(ngram_proposer, the_tokens_after_the_latest_occurrence_of_the_longest_suffix) {
  //                        0  1  2  3  4  5  6  7  8  9 10 11
  const std::vector<int32_t> t{5, 6, 7, 1, 2, 9, 6, 7, 3, 4, 6, 7};
  // Suffix "6 7" occurred at 1 and 6; the latest (6) is followed by 3 4 6 7.
  EXPECT_EQ(proposals(t, 3, 1, 2), (std::vector<int32_t>{3, 4, 6}));
  // Up to the end of the tokens, never past.
  EXPECT_EQ(proposals({1, 2, 1}, 5, 1, 1), (std::vector<int32_t>{2, 1}));
  // With n = 3 the suffix "4 6 7" never occurred before, so n = 2 answers.
  EXPECT_EQ(proposals(t, 2, 2, 3), (std::vector<int32_t>{3, 4}));
  const std::vector<int32_t> u{1, 2, 3, 8, 2, 3, 9, 1, 2, 3};
  // n = 3 ("1 2 3" at 0) beats n = 2 ("2 3" latest at 4).
  EXPECT_EQ(proposals(u, 1, 2, 3), (std::vector<int32_t>{8}));
  EXPECT_EQ(proposals(u, 1, 2, 2), (std::vector<int32_t>{9}));
}

TEST(ngram_proposer, nothing_without_a_recurring_suffix_or_room) {
  EXPECT_TRUE(proposals({1, 2, 3, 4}, 3, 1, 3).empty());
  EXPECT_TRUE(proposals({1, 2, 1, 2}, 0, 1, 3).empty());
  EXPECT_TRUE(proposals({7}, 3, 1, 3).empty());
  EXPECT_TRUE(proposals({}, 3, 1, 3).empty());
  EXPECT_TRUE(proposals({1, 2, 3, 1, 2}, 3, 3, 3).empty());  // min_n too long
}

TEST(speculative_config, reads_vllms_json_and_refuses_what_it_cannot_do) {
  speculative_config c;
  EXPECT_EQ(parse_speculative_config(
                R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3})", c),
            "");
  EXPECT_EQ(c.method, speculative_method::ngram);
  EXPECT_EQ(c.num_speculative_tokens, 4);
  EXPECT_EQ(c.prompt_lookup_min, 3);  // one bound sets both
  EXPECT_EQ(c.prompt_lookup_max, 3);
  EXPECT_EQ(parse_speculative_config(R"({"model":"/m","num_speculative_tokens":2})", c), "");
  EXPECT_EQ(c.method, speculative_method::draft_model);
  EXPECT_EQ(c.draft_model, "/m");
  EXPECT_EQ(parse_speculative_config(
                R"({"method":"ngram","num_speculative_tokens":2,"disable_by_batch_size":8,
                    "min_acceptance_rate":0.5})",
                c),
            "");
  EXPECT_EQ(c.disable_by_batch_size, 8);
  EXPECT_DOUBLE_EQ(c.min_acceptance_rate, 0.5);

  const auto refused = [](const char* json) {
    speculative_config c;
    return parse_speculative_config(json, c);
  };
  EXPECT_NE(refused("not json"), "");
  EXPECT_NE(refused("[]"), "");
  EXPECT_NE(refused(R"({"method":"ngram"})").find("num_speculative_tokens"), std::string::npos);
  EXPECT_NE(refused(R"({"method":"eagle","model":"x","num_speculative_tokens":2})").find("eagle"),
            std::string::npos);
  EXPECT_NE(refused(R"({"method":"ngram","num_speculative_tokens":0})"), "");
  EXPECT_NE(refused(R"({"method":"ngram","num_speculative_tokens":1000})"), "");
  EXPECT_NE(refused(R"({"method":"ngram","num_speculative_tokens":2,"prompt_lookup_min":4,
                        "prompt_lookup_max":2})"),
            "");
  EXPECT_NE(refused(R"({"method":"ngram","num_speculative_tokens":2,"typo":1})").find("typo"),
            std::string::npos);
  EXPECT_NE(refused(R"({"method":"draft_model","num_speculative_tokens":2})"), "");
}

/// The target distribution the way its definition reads (an oracle independent of the
/// sampler's code): softmax(logits / T) over the top_k, cut to the smallest prefix holding
/// top_p of the mass, renormalised.
std::vector<double> target_distribution(const std::vector<float>& logits,
                                        const sampling_params& p) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const size_t keep = p.top_k > 0 ? std::min<size_t>(p.top_k, order.size()) : order.size();
  std::vector<double> w(logits.size(), 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += w[order[i]] = std::exp((logits[order[i]] - logits[order[0]]) / p.temperature);
  double mass = 0, kept = 0;
  for (size_t i = 0; i < keep; ++i) {
    if (mass >= p.top_p) {
      w[order[i]] = 0;
      continue;
    }
    mass += w[order[i]] / total;
    kept += w[order[i]];
  }
  for (double& x : w) x /= kept;
  return w;
}

/// Pearson's statistic of `counts` against `expected` probabilities over `n` draws, and the
/// critical value at a false-alarm rate of 1e-6 (Wilson-Hilferty, z = 4.753) for its degrees
/// of freedom. The seeds are fixed, so the test is deterministic; the rate says how unlikely
/// a correct sampler is to fail it with any other seeds.
std::pair<double, double> chi_square(const std::map<int32_t, int64_t>& counts,
                                     const std::vector<double>& expected, int64_t n) {
  double statistic = 0;
  int df = -1;
  for (size_t t = 0; t < expected.size(); ++t) {
    const int64_t seen = counts.count(t) ? counts.at(t) : 0;
    if (expected[t] == 0) {
      EXPECT_EQ(seen, 0) << "token " << t << " has no probability but was drawn";
      continue;
    }
    const double e = expected[t] * static_cast<double>(n);
    statistic += (seen - e) * (seen - e) / e;
    ++df;
  }
  const double z = 4.753, a = 2.0 / (9.0 * df);
  return {statistic, df * std::pow(1 - a + z * std::sqrt(a), 3)};
}

TEST(speculative_sampling, greedy_verification_keeps_drafts_while_they_are_the_argmax) {
  sampler s;
  sampling_params p;
  p.temperature = 0;
  sampler_state st(1);
  // Rows' argmaxes: 2, 0, 3, 1.
  std::vector<float> rows = {0, 1, 5, 0, /**/ 4, 1, 0, 0, /**/ 0, 0, 0, 9, /**/ 0, 7, 0, 0};
  auto tokens = [&](std::vector<int32_t> drafts) {
    auto copy = rows;
    std::vector<int32_t> out;
    for (auto& r : s.verify(std::span(copy).first(4 * (drafts.size() + 1)), 4, drafts, p, {}, st))
      out.push_back(r.token_id);
    return out;
  };
  EXPECT_EQ(tokens({2, 0, 3}), (std::vector<int32_t>{2, 0, 3, 1}));  // all accepted, one more
  EXPECT_EQ(tokens({2, 1, 3}), (std::vector<int32_t>{2, 0}));        // second rejected
  EXPECT_EQ(tokens({3, 0, 3}), (std::vector<int32_t>{2}));           // first rejected
  EXPECT_EQ(tokens({}), (std::vector<int32_t>{2}));
}

TEST(speculative_sampling, every_emitted_token_is_distributed_as_the_targets_draw) {
  const std::vector<float> row0 = {1.0f, 2.5f, 0.2f, 2.0f, -1.0f, 0.7f, 1.6f, -3.0f};
  const std::vector<float> row1 = {0.3f, -1.0f, 1.9f, 1.2f, 0.0f, 2.2f, -0.5f, 0.9f};
  for (const auto& [temperature, top_k, top_p] :
       std::vector<std::tuple<float, int32_t, float>>{{1.0f, 0, 1.0f}, {0.7f, 6, 0.9f}}) {
    sampling_params p;
    p.temperature = temperature;
    p.top_k = top_k;
    p.top_p = top_p;
    const auto p0 = target_distribution(row0, p), p1 = target_distribution(row1, p);
    // Drafts: the likeliest token, an unlikely one, and one the target never draws.
    for (const int32_t draft0 : {1, 5, 7}) {
      const int32_t draft1 = 2;
      std::map<int32_t, int64_t> first, second;
      int64_t num_draws = 40000, num_second = 0;
      sampler s;
      for (int64_t i = 0; i < num_draws; ++i) {
        sampler_state st(1000 + i);
        std::vector<float> rows = row0;
        rows.insert(rows.end(), row1.begin(), row1.end());
        rows.insert(rows.end(), row0.begin(), row0.end());
        const std::vector<int32_t> drafts{draft0, draft1};
        const auto out = s.verify(rows, 8, drafts, p, {}, st);
        ASSERT_GE(out.size(), 1u);
        ++first[out[0].token_id];
        // The second token exists exactly when the first draft stood.
        ASSERT_EQ(out.size() > 1, out[0].token_id == draft0);
        if (out.size() > 1) ++second[out[1].token_id], ++num_second;
      }
      const auto [x0, limit0] = chi_square(first, p0, num_draws);
      EXPECT_LT(x0, limit0) << "first token, draft " << draft0 << " T " << temperature;
      if (p0[draft0] > 0.05) {
        const auto [x1, limit1] = chi_square(second, p1, num_second);
        EXPECT_LT(x1, limit1) << "second token, draft " << draft0 << " T " << temperature;
      }
    }
  }
}

}  // namespace
}  // namespace actorllm
