// The full device draw (sample_rows) against a slow, obvious double-precision reference of the
// same rule: mask, logit bias, repetition / presence / frequency penalties as the host sampler
// applies them, then temperature, top-k, top-p, min-p and the inverse CDF in index order from
// the same uniform. Each feature has a case that a kernel ignoring it would get wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "kernels/cuda/sampling.cuh"
#include "tests/cuda/cuda_test_util.hpp"
#include "tests/cuda/reference_draw.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

/// One row's draw: its parameters, its edits (any order; unique tokens) and its mask (empty:
/// none; else words_per_row words).
struct draw_case {
  row_sampling params;
  std::vector<logit_edit> edits;
  std::vector<uint32_t> mask;
};

struct sample_rows_output {
  std::vector<int32_t> tokens;   // (n)
  std::vector<float> processed;  // (n, vocab): the rows after mask and edits
};

/// Uploads `logits` (n, vocab) and the cases, runs sample_rows, brings both results back.
sample_rows_output run_sample_rows(const std::vector<float>& logits, int vocab,
                                   const std::vector<draw_case>& cases, int64_t words_per_row) {
  const auto n = static_cast<int64_t>(cases.size());
  std::vector<row_sampling> params;
  std::vector<int32_t> offsets{0}, mask_of_row;
  std::vector<logit_edit> edits;
  std::vector<uint32_t> masks;
  int32_t num_masks = 0;
  for (const auto& c : cases) {
    params.push_back(c.params);
    auto sorted = c.edits;
    std::sort(sorted.begin(), sorted.end(),
              [](const logit_edit& a, const logit_edit& b) { return a.token < b.token; });
    edits.insert(edits.end(), sorted.begin(), sorted.end());
    offsets.push_back(static_cast<int32_t>(edits.size()));
    if (c.mask.empty()) {
      mask_of_row.push_back(-1);
    } else {
      mask_of_row.push_back(num_masks++);
      masks.insert(masks.end(), c.mask.begin(), c.mask.end());
    }
  }
  edits.push_back({});  // never read; keeps the buffer non-empty
  masks.push_back(0u);
  device_tensor d_logits(logits, dtype::f32);
  auto d_params = upload(params), d_offsets = upload(offsets), d_edits = upload(edits),
       d_mask_of_row = upload(mask_of_row), d_masks = upload(masks);
  device_buffer d_tokens(n * sizeof(int32_t));
  CUDA_CHECK(cudaMemset(d_tokens.get(), 0xFF, d_tokens.size()));
  sample_rows(static_cast<float*>(d_logits.get()), n, vocab, d_params.as<row_sampling>(),
              d_offsets.as<int32_t>(), d_edits.as<logit_edit>(), d_mask_of_row.as<int32_t>(),
              d_masks.as<uint32_t>(), words_per_row, d_tokens.as<int32_t>(), nullptr);
  sync_device();
  return {download<int32_t>(d_tokens, n), d_logits.download()};
}

/// The row after the mask and the edits, in double, in the host sampler's order.
std::vector<double> reference_processed(const float* row, int vocab, const draw_case& c,
                                        int64_t words_per_row) {
  std::vector<double> l(row, row + vocab);
  if (!c.mask.empty())
    for (int j = 0; j < vocab; ++j) {
      const uint32_t bits = j / 32 < words_per_row ? c.mask[j / 32] : 0u;
      if (!((bits >> (j % 32)) & 1u)) l[j] = -kInf;
    }
  const row_sampling& p = c.params;
  for (const auto& e : c.edits) {
    double x = l[e.token] + e.bias;
    if (e.seen && p.repetition_penalty != 1.0f)
      x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
    if (e.output_count > 0 && (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f))
      x -= double(p.frequency_penalty) * e.output_count + p.presence_penalty;
    l[e.token] = x;
  }
  return l;
}

/// Every processed logit within rounding of the reference; -infinity exactly where it is.
::testing::AssertionResult processed_match(const std::vector<float>& actual,
                                           const std::vector<double>& expected, size_t offset) {
  for (size_t j = 0; j < expected.size(); ++j) {
    const double a = actual[offset + j], e = expected[j];
    const bool ok = e == -kInf ? a == -kInf : std::fabs(a - e) <= 1e-5 + 1e-5 * std::fabs(e);
    if (!ok) return ::testing::AssertionFailure() << "logit " << j << ": " << a << " vs " << e;
  }
  return ::testing::AssertionSuccess();
}

row_sampling greedy_row() {
  return row_sampling{};
}

row_sampling sampling_row(float uniform, float temperature = 1.0f) {
  row_sampling p;
  p.temperature = temperature;
  p.uniform = uniform;
  return p;
}

/// Runs the cases on `logits`, checks every row's processed logits and token against the
/// reference, and returns the tokens.
std::vector<int32_t> checked_tokens(const std::vector<float>& logits, int vocab,
                                    const std::vector<draw_case>& cases,
                                    int64_t words_per_row = 0) {
  const auto out = run_sample_rows(logits, vocab, cases, words_per_row);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto expected =
        reference_processed(logits.data() + i * vocab, vocab, cases[i], words_per_row);
    EXPECT_TRUE(processed_match(out.processed, expected, i * vocab)) << "row " << i;
    EXPECT_EQ(out.tokens[i], reference_draw(expected, cases[i].params)) << "row " << i;
  }
  return out.tokens;
}

/// Small noise with two clear leaders: token `first` at `a`, token `second` at `b`.
std::vector<float> two_leaders(int vocab, int rows, int first, float a, int second, float b,
                               uint32_t seed) {
  std::mt19937 rng(seed);
  auto logits = random_floats(size_t(rows) * vocab, rng, -0.1f, 0.1f);
  for (int r = 0; r < rows; ++r) {
    logits[size_t(r) * vocab + first] = a;
    logits[size_t(r) * vocab + second] = b;
  }
  return logits;
}

TEST(CudaSampleRows, LogitBiasMovesTheDraw) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 1000;
  std::mt19937 rng(41);
  const auto logits = random_floats(3 * vocab, rng, -1.0f, 1.0f);
  const auto row_2 = logits.begin() + 2 * vocab;
  const int top = int(std::max_element(row_2, row_2 + vocab) - row_2);
  const std::vector<draw_case> cases{
      {greedy_row(), {{777, 40.0f, 0, 0}}, {}},        // a large bias wins the argmax
      {sampling_row(0.5f), {{777, 40.0f, 0, 0}}, {}},  // and all the mass
      {greedy_row(), {{top, -100.0f, 0, 0}}, {}},      // a ban hands it to the runner-up
  };
  const auto tokens = checked_tokens(logits, vocab, cases);
  EXPECT_EQ(tokens[0], 777);
  EXPECT_EQ(tokens[1], 777);
  EXPECT_NE(tokens[2], top);
}

TEST(CudaSampleRows, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 512;
  auto logits = two_leaders(vocab, 3, 10, 3.0f, 20, 2.0f, 42);
  // Row 2: every logit negative; token 5 leads at -0.5, token 6 follows at -0.8.
  for (int j = 0; j < vocab; ++j) logits[2 * vocab + j] = -2.0f - 0.001f * j;
  logits[2 * vocab + 5] = -0.5f;
  logits[2 * vocab + 6] = -0.8f;
  row_sampling penalised = greedy_row();
  penalised.repetition_penalty = 2.0f;
  const std::vector<draw_case> cases{
      {penalised, {{10, 0.0f, 0, 1}}, {}},     // 3 / 2 = 1.5 < 2: token 20
      {greedy_row(), {{10, 0.0f, 0, 1}}, {}},  // penalty 1: untouched
      {penalised, {{5, 0.0f, 0, 1}}, {}},      // -0.5 * 2 = -1 < -0.8: token 6
  };
  const auto tokens = checked_tokens(logits, vocab, cases);
  EXPECT_EQ(tokens, (std::vector<int32_t>{20, 10, 6}));
}

TEST(CudaSampleRows, PresencePenaltyHitsTokensOfTheOutput) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 512;
  const auto logits = two_leaders(vocab, 3, 10, 3.0f, 20, 2.5f, 43);
  row_sampling present = greedy_row();
  present.presence_penalty = 1.0f;
  row_sampling none = greedy_row();
  const std::vector<draw_case> cases{
      {present, {{10, 0.0f, 1, 0}}, {}},  // 3 - 1 = 2 < 2.5: token 20
      {present, {{10, 0.0f, 0, 1}}, {}},  // seen in the prompt only: untouched
      {none, {{10, 0.0f, 4, 0}}, {}},     // no penalty set: untouched
  };
  const auto tokens = checked_tokens(logits, vocab, cases);
  EXPECT_EQ(tokens, (std::vector<int32_t>{20, 10, 10}));
}

TEST(CudaSampleRows, FrequencyPenaltyScalesWithTheCount) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 512;
  const auto logits = two_leaders(vocab, 2, 10, 3.0f, 20, 2.0f, 44);
  row_sampling frequent = greedy_row();
  frequent.frequency_penalty = 0.5f;
  const std::vector<draw_case> cases{
      {frequent, {{10, 0.0f, 3, 0}}, {}},  // 3 - 1.5 < 2: token 20
      {frequent, {{10, 0.0f, 1, 0}}, {}},  // 3 - 0.5 > 2: token 10
  };
  const auto tokens = checked_tokens(logits, vocab, cases);
  EXPECT_EQ(tokens, (std::vector<int32_t>{20, 10}));
}

TEST(CudaSampleRows, MinPDropsTokensBelowItsShareOfTheTop) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 1000;
  // Token 0 at 0, every other at -3: each holds e^-3 ~ 0.05 of the top's probability, and
  // together nearly all the mass, so a late uniform lands past token 0 unless min_p cuts.
  std::vector<float> logits(3 * vocab, -3.0f);
  for (int r = 0; r < 3; ++r) logits[r * vocab] = 0.0f;
  row_sampling strict = sampling_row(0.6f), loose = sampling_row(0.6f);
  strict.min_p = 0.1f;
  loose.min_p = 0.01f;
  const std::vector<draw_case> cases{
      {strict, {}, {}}, {loose, {}, {}}, {sampling_row(0.6f), {}, {}}};
  const auto tokens = checked_tokens(logits, vocab, cases);
  EXPECT_EQ(tokens[0], 0);
  EXPECT_GT(tokens[1], 0);
  EXPECT_EQ(tokens[1], tokens[2]);
}

TEST(CudaSampleRows, MaskBlocksTokensBeforeTheDraw) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 1000;
  const int64_t words = (vocab + 31) / 32;
  std::mt19937 rng(45);
  const auto logits = random_floats(3 * vocab, rng, -1.0f, 1.0f);
  std::vector<uint32_t> only_3_and_900(words, 0u);
  only_3_and_900[0] |= 1u << 3;
  only_3_and_900[900 / 32] |= 1u << (900 % 32);
  const std::vector<draw_case> cases{
      {greedy_row(), {}, only_3_and_900},
      {sampling_row(0.999f), {}, only_3_and_900},
      {sampling_row(0.999f), {{3, -50.0f, 0, 0}}, only_3_and_900},  // the mask, then the bias
  };
  const auto tokens = checked_tokens(logits, vocab, cases, words);
  EXPECT_EQ(tokens[0], logits[3] >= logits[900] ? 3 : 900);
  EXPECT_TRUE(tokens[1] == 3 || tokens[1] == 900) << tokens[1];
  EXPECT_EQ(tokens[2], 900);
}

TEST(CudaSampleRows, EverythingTogetherMatchesReference) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(46);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  const std::vector<int32_t> ks{0, 1, 5, 50};
  const std::vector<float> ps{1.0f, 0.9f, 0.5f};
  const std::vector<float> min_ps{0.0f, 0.05f, 0.3f};
  const std::vector<float> repetitions{1.0f, 1.3f, 0.8f};
  const std::vector<float> presences{0.0f, 0.7f, -0.5f};
  const std::vector<float> frequencies{0.0f, 0.4f};
  for (int vocab : {1000, 32000, 128256}) {
    const int n = 48;
    const int64_t words = (vocab + 31) / 32 - 1;  // the last ids lie past every mask
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(size_t(n) * vocab);
    for (auto& x : logits) x = normal(rng);
    std::vector<draw_case> cases(n);
    for (int i = 0; i < n; ++i) {
      row_sampling& p = cases[i].params;
      p.temperature = i % 6 == 0 ? 0.0f : 0.5f + unit(rng);
      p.top_k = ks[i % ks.size()];
      p.top_p = ps[(i / 2) % ps.size()];
      p.min_p = min_ps[(i / 3) % min_ps.size()];
      p.repetition_penalty = repetitions[i % repetitions.size()];
      p.presence_penalty = presences[(i / 4) % presences.size()];
      p.frequency_penalty = frequencies[(i / 5) % frequencies.size()];
      p.uniform = unit(rng) * 0.999f;
      // Edits on the row's current leaders (so that they matter) and on random tokens.
      const float* row = logits.data() + size_t(i) * vocab;
      std::vector<int32_t> order(vocab);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + 8, order.end(),
                        [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      std::vector<int32_t> tokens(order.begin(), order.begin() + 8);
      for (int e = 0; e < 24; ++e) tokens.push_back(int32_t(rng() % vocab));
      std::sort(tokens.begin(), tokens.end());
      tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
      for (int32_t t : tokens)
        cases[i].edits.push_back({t, rng() % 3 == 0 ? 4.0f * unit(rng) - 2.0f : 0.0f,
                                  int32_t(rng() % 4), int32_t(rng() % 2)});
      if (i % 4 == 3) {
        cases[i].mask.resize(words);
        for (auto& w : cases[i].mask) w = uint32_t(rng()) | uint32_t(rng());  // ~3/4 allowed
      }
    }
    const auto out = run_sample_rows(logits, vocab, cases, words);
    int compared = 0;
    for (int i = 0; i < n; ++i) {
      ASSERT_GE(out.tokens[i], 0) << "row " << i;
      ASSERT_LT(out.tokens[i], vocab) << "row " << i;
      const auto expected =
          reference_processed(logits.data() + size_t(i) * vocab, vocab, cases[i], words);
      EXPECT_TRUE(processed_match(out.processed, expected, size_t(i) * vocab))
          << "vocab " << vocab << " row " << i;
      EXPECT_GT(expected[out.tokens[i]], -kInf) << "a blocked token drawn, row " << i;
      const int pick = reference_draw(expected, cases[i].params);
      if (pick < 0) continue;
      ++compared;
      const auto& p = cases[i].params;
      EXPECT_EQ(out.tokens[i], pick)
          << "vocab " << vocab << " row " << i << " T " << p.temperature << " k " << p.top_k
          << " p " << p.top_p << " min_p " << p.min_p << " rep " << p.repetition_penalty
          << " presence " << p.presence_penalty << " frequency " << p.frequency_penalty;
    }
    EXPECT_GE(compared, n * 3 / 4) << "vocab " << vocab;
    // A pure function of its inputs: the same call draws the same tokens.
    EXPECT_EQ(run_sample_rows(logits, vocab, cases, words).tokens, out.tokens);
  }
}

}  // namespace
}  // namespace actorllm::cuda
