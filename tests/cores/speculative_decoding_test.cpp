// Speculative decoding on the actor-free engine with stories260K, by n-gram lookup and by a
// draft model: greedy output identical to plain decoding under batching, chunked prefill,
// preemption (both modes) and n > 1; drafts really verified and accepted; every block back at
// the end; and under sampling, the tokens' distribution that of plain decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "actors/offline_engine/llm_engine.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::ids_request;

engine_config speculating(engine_config c, const speculative_config& spec) {
  c.speculative = spec;
  return c;
}

/// Stories repeat themselves: a greedy story of stories260K gives n-gram lookup plenty to do.
std::vector<generate_request> stories(int count, int max_tokens) {
  auto requests = testing::varied_requests(count, max_tokens, 12, "s");
  requests[0] = ids_request("s0", {1}, max_tokens);
  return requests;
}

std::vector<std::vector<int32_t>> alone_tokens(const std::vector<generate_request>& requests) {
  return testing::solo_tokens(testing::stories_config(256, 256), requests);
}

TEST(speculative_decoding, greedy_ngram_gives_exactly_the_plain_tokens_and_accepts_drafts) {
  const auto requests = stories(6, 150);
  const auto alone = alone_tokens(requests);
  for (int32_t k : {1, 3, 5}) {
    llm_engine engine(engine_setup::load(
        speculating(testing::stories_config(256, 256), testing::ngram_speculation(k))));
    const auto out = run_to_completion(engine, requests);
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(out[i][0].token_ids, alone[i]) << "request " << i << " k " << k;
    const auto spec = engine.stats().speculation;
    EXPECT_GT(spec.num_drafts, 0) << "k " << k;
    EXPECT_GT(spec.num_accepted_tokens, 0) << "k " << k;
    EXPECT_LE(spec.num_accepted_tokens, spec.num_draft_tokens);
    EXPECT_LE(static_cast<int32_t>(spec.accepted_per_position.size()), k);
    // Fewer steps than tokens: accepted drafts came out of one forward with their token.
    EXPECT_EQ(engine.stats().device.num_used, 0);
  }
}

TEST(speculative_decoding, a_lone_sequence_needs_fewer_steps) {
  const auto request = ids_request("s", {1}, 200);
  auto count_steps = [&](engine_config c) {
    llm_engine engine(engine_setup::load(c));
    engine.add_request(request);
    int steps = 0;
    while (engine.has_work()) engine.step(), ++steps;
    return std::pair(steps, engine.stats().speculation.num_accepted_tokens);
  };
  const auto [plain_steps, none] = count_steps(testing::stories_config(256, 256));
  const auto [spec_steps, accepted] =
      count_steps(speculating(testing::stories_config(256, 256), testing::ngram_speculation(4)));
  EXPECT_EQ(none, 0);
  EXPECT_GT(accepted, 0);
  // Each accepted draft is a step saved (the pacer never pauses a sequence that pays).
  EXPECT_EQ(spec_steps, plain_steps - accepted);
}

TEST(speculative_decoding, batched_chunked_and_preempted_runs_match_alone) {
  const auto requests = testing::varied_requests(16, 60, 30, "r");
  const auto alone = alone_tokens(requests);
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = speculating(testing::stories_config(256, 256), testing::ngram_speculation(3));
    c.scheduler.max_num_batched_tokens = 9;  // chunked prefill, and drafts cut by the budget
    c.scheduler.preemption = mode;
    c.cache.num_gpu_blocks_override = 16;  // 128 tokens: forces preemption
    c.model.max_model_len = 128;
    c.cache.block_size = 8;
    llm_engine engine(engine_setup::load(c));
    const auto out = run_to_completion(engine, requests);
    testing::expect_preempted_run_matches_alone(engine, out, alone, mode);
    EXPECT_GT(engine.stats().speculation.num_accepted_tokens, 0) << to_string(mode);
  }
}

TEST(speculative_decoding, n_choices_each_speculate_and_match_plain_decoding) {
  // By n-gram lookup and by a draft model (each choice has its own draft cache).
  auto r = ids_request("n", {1}, 150);  // drafts start to hit after 60 tokens or so
  r.params.n = 3;
  r.params.temperature = 0;
  llm_engine plain(engine_setup::load(testing::stories_config(256, 256)));
  const auto expected = run_to_completion(plain, {r})[0];
  for (const auto& spec : {testing::ngram_speculation(3),
                           testing::draft_speculation(testing::stories260k_dir().string(), 3)}) {
    llm_engine engine(engine_setup::load(speculating(testing::stories_config(256, 256), spec)));
    const auto out = run_to_completion(engine, {r})[0];
    ASSERT_EQ(out.size(), 3u);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].token_ids, expected[i].token_ids);
    EXPECT_GT(engine.stats().speculation.num_accepted_tokens, 0);
    EXPECT_EQ(engine.stats().device.num_used, 0);
  }
}

TEST(speculative_decoding, stop_tokens_and_max_tokens_cut_inside_accepted_drafts) {
  llm_engine plain(engine_setup::load(testing::stories_config(256, 256)));
  const auto story = run_to_completion(plain, {ids_request("p", {1}, 150)})[0][0].token_ids;
  llm_engine engine(engine_setup::load(
      speculating(testing::stories_config(256, 256), testing::ngram_speculation(5))));
  for (int32_t max_tokens : {37, 64, 101}) {
    const auto out = run_to_completion(engine, {ids_request("m", {1}, max_tokens)})[0][0];
    EXPECT_EQ(out.token_ids, std::vector<int32_t>(story.begin(), story.begin() + max_tokens));
    EXPECT_EQ(out.finish, finish_reason::length);
  }
  auto stopped = ids_request("t", {1}, 150);
  stopped.params.stop_token_ids = {story[120]};
  const auto first_stop = std::find(story.begin(), story.end(), story[120]) - story.begin();
  const auto out = run_to_completion(engine, {stopped})[0][0];
  EXPECT_EQ(out.token_ids, std::vector<int32_t>(story.begin(), story.begin() + first_stop + 1));
  EXPECT_EQ(out.finish, finish_reason::stop);
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(speculative_decoding, logprobs_of_verified_tokens_equal_plain_decodings) {
  auto r = ids_request("l", {1}, 150);
  r.params.logprobs = 2;
  llm_engine plain(engine_setup::load(testing::stories_config(256, 256)));
  const auto expected = run_to_completion(plain, {r})[0][0];
  llm_engine engine(engine_setup::load(
      speculating(testing::stories_config(256, 256), testing::ngram_speculation(3))));
  const auto out = run_to_completion(engine, {r})[0][0];
  ASSERT_EQ(out.token_ids, expected.token_ids);
  ASSERT_EQ(out.logprobs.size(), expected.logprobs.size());
  for (size_t i = 0; i < out.logprobs.size(); ++i) {
    EXPECT_NEAR(out.logprobs[i].logprob, expected.logprobs[i].logprob, 1e-4) << i;
    EXPECT_EQ(out.logprobs[i].top_ids, expected.logprobs[i].top_ids) << i;
  }
  EXPECT_GT(engine.stats().speculation.num_accepted_tokens, 0);
}

TEST(speculative_decoding, disable_by_batch_size_turns_speculation_off_for_a_full_batch) {
  // Eight stories of the same length run together from start to end: with the limit at 4 no
  // sequence speculates while they run; without it they do; alone, one speculates again.
  std::vector<generate_request> batch;
  for (int i = 0; i < 8; ++i) batch.push_back(ids_request("b" + std::to_string(i), {1}, 150));
  auto limited = testing::ngram_speculation(3);
  limited.disable_by_batch_size = 4;
  llm_engine engine(engine_setup::load(speculating(testing::stories_config(256, 256), limited)));
  run_to_completion(engine, batch);
  EXPECT_EQ(engine.stats().speculation.num_drafts, 0);
  run_to_completion(engine, {ids_request("alone", {1}, 150)});
  EXPECT_GT(engine.stats().speculation.num_drafts, 0);

  llm_engine unlimited(engine_setup::load(
      speculating(testing::stories_config(256, 256), testing::ngram_speculation(3))));
  run_to_completion(unlimited, batch);
  EXPECT_GT(unlimited.stats().speculation.num_drafts, 0);
}

TEST(speculative_decoding, a_draft_model_gives_exactly_the_plain_tokens) {
  const auto requests = testing::varied_requests(12, 60, 30, "d");
  const auto alone = alone_tokens(requests);
  // The target as its own draft (nearly every draft stands), a random draft with the target's
  // vocabulary (nearly none does), and one whose vocabulary is larger (its ids past the
  // target's are never proposed).
  testing::random_model same_vocab("draft512",
                                   "--dim 64 --layers 2 --heads 4 --kv-heads 2 --hidden 172 "
                                   "--vocab 512");
  testing::random_model larger_vocab("draft600",
                                     "--dim 64 --layers 1 --heads 4 --kv-heads 4 --hidden 96 "
                                     "--vocab 600 --seed 7");
  const std::string itself = testing::stories260k_dir().string();
  for (const auto& [dir, min_rate] : std::vector<std::pair<std::string, double>>{
           {itself, 0.9}, {same_vocab.dir().string(), 0.0}, {larger_vocab.dir().string(), 0.0}}) {
    for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
      auto c = speculating(testing::stories_config(256, 256), testing::draft_speculation(dir, 3));
      c.scheduler.max_num_batched_tokens = 16;  // chunked prefill
      c.scheduler.preemption = mode;
      c.cache.num_gpu_blocks_override = 24;  // forces preemption
      c.model.max_model_len = 128;
      c.cache.block_size = 8;
      llm_engine engine(engine_setup::load(c));
      const auto out = run_to_completion(engine, requests);
      testing::expect_preempted_run_matches_alone(engine, out, alone, mode);
      const auto spec = engine.stats().speculation;
      EXPECT_GT(spec.num_draft_tokens, 0) << dir;
      EXPECT_GE(double(spec.num_accepted_tokens), min_rate * double(spec.num_draft_tokens))
          << dir << ": " << spec.num_accepted_tokens << "/" << spec.num_draft_tokens;
    }
  }
}

// A draft that reads ids as other text would propose what the target never accepts (or, with
// a close vocabulary, text the target never meant): refused at load, naming the first id.
TEST(speculative_decoding, a_draft_with_another_vocabulary_is_refused) {
  testing::random_model other("draft-other-vocab",
                              "--dim 64 --layers 1 --heads 4 --kv-heads 4 --hidden 96 --vocab 512");
  nlohmann::json tok;
  {
    std::ifstream in(other.dir() / "tokenizer.json");
    tok = nlohmann::json::parse(in);
  }
  auto& vocab = tok["model"]["vocab"];
  const int32_t a = vocab["▁ha"], b = vocab["▁S"];
  vocab["▁ha"] = b;
  vocab["▁S"] = a;
  std::ofstream(other.dir() / "tokenizer.json") << tok.dump();
  auto c = speculating(testing::stories_config(256, 256),
                       testing::draft_speculation(other.dir().string(), 3));
  try {
    engine_setup::load(c);
    ADD_FAILURE() << "a draft with another vocabulary loaded";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("must share the target's vocabulary"), std::string::npos) << what;
    EXPECT_NE(what.find("reads id 300"), std::string::npos) << what;
  }
}

/// Homogeneity of two samples of equal size (Pearson's chi-square over the cells with at
/// least 10 draws together; the rest pooled), against the critical value at a false-alarm
/// rate of 1e-6 (Wilson-Hilferty, z = 4.753).
/// Returns the degrees of freedom.
int expect_same_distribution(const std::map<int32_t, int64_t>& a,
                             const std::map<int32_t, int64_t>& b, const std::string& what) {
  std::map<int32_t, std::pair<int64_t, int64_t>> cells;
  for (const auto& [t, n] : a) cells[t].first += n;
  for (const auto& [t, n] : b) cells[t].second += n;
  std::pair<int64_t, int64_t> pooled{0, 0};
  double statistic = 0;
  int df = -1;
  auto add = [&](std::pair<int64_t, int64_t> c) {
    const double d = double(c.first - c.second);
    statistic += d * d / double(c.first + c.second);
    ++df;
  };
  for (const auto& [t, c] : cells) {
    if (c.first + c.second < 10) {
      pooled.first += c.first, pooled.second += c.second;
      continue;
    }
    add(c);
  }
  if (pooled.first + pooled.second > 0) add(pooled);
  if (df < 1) return 0;  // one token only: nothing to compare
  const double z = 4.753, q = 2.0 / (9.0 * df);
  const double limit = df * std::pow(1 - q + z * std::sqrt(q), 3);
  EXPECT_LT(statistic, limit) << what << ": chi-square " << statistic << " over " << df
                              << " degrees of freedom";
  return df;
}

TEST(speculative_decoding, sampled_tokens_are_distributed_as_without_speculation) {
  // 1500 seeded requests for one prompt; the tokens at output positions 1 to 4 must have the
  // same distribution with the target as its own draft (every position verified, almost every
  // draft accepted, rejections still drawn from the residual) as without speculation.
  const int num_draws = 1500, positions = 5;
  auto histograms = [&](const engine_config& c) {
    llm_engine engine(engine_setup::load(c));
    std::vector<generate_request> requests;
    for (int i = 0; i < num_draws; ++i) {
      auto r = ids_request("x" + std::to_string(i), {1, 403, 407}, positions);
      r.params.temperature = 1.3f;
      r.params.top_k = 40;
      r.params.seed = 1000 + i;
      requests.push_back(r);
    }
    std::vector<std::map<int32_t, int64_t>> at(positions);
    for (const auto& out : run_to_completion(engine, requests))
      for (int p = 0; p < positions; ++p) ++at[p][out[0].token_ids.at(p)];
    return std::pair(at, engine.stats().speculation);
  };
  auto c = testing::stories_config(2048, 0);
  c.scheduler.max_num_seqs = 256;
  const auto [plain, none] = histograms(c);
  const auto [speculated, spec] = histograms(
      speculating(c, testing::draft_speculation(testing::stories260k_dir().string(), 3)));
  ASSERT_GT(spec.num_draft_tokens, num_draws);
  EXPECT_LT(spec.num_accepted_tokens, spec.num_draft_tokens);  // rejections happened
  int degrees = 0;
  for (int p = 1; p < positions; ++p)
    degrees +=
        expect_same_distribution(plain[p], speculated[p], "output position " + std::to_string(p));
  EXPECT_GE(degrees, 20) << "too few distinct tokens for the test to say much";
}

}  // namespace
}  // namespace actorllm
