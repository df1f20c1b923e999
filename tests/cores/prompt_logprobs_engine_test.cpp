// Prompt logprobs through the actor-free engine: every prompt token's logprob, rank and top
// alternatives equal a float64 reference (tests/reference/reference_forward.py
// --prompt-logprobs) to 1e-4, alone, through chunked prefill beside other requests, with the
// prompt's prefix already in the cache, across a preemption, and for every choice of n > 1;
// echo without generation returns the prompt alone. Every block comes back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/offline_engine/llm_engine.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

constexpr int32_t num_top = 3;

/// The reference's entries, the first (null) left out: entry i scores prompt token i + 1.
nlohmann::json reference_prompt_logprobs(const std::vector<int32_t>& prompt) {
  std::string ids;
  for (int32_t id : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const auto out = std::filesystem::temp_directory_path() /
                   ("actorllm-prompt-logprobs-" + std::to_string(::getpid()) + ".json");
  const std::string command = testing::python() + " " + std::string(ACTORLLM_SOURCE_DIR) +
                              "/tests/reference/reference_forward.py " +
                              testing::stories260k_dir().string() + " --prompt " + ids +
                              " --prompt-logprobs " + std::to_string(num_top) + " --out " +
                              out.string();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  std::ifstream in(out);
  auto entries = nlohmann::json::parse(in)["prompt_logprobs"];
  std::filesystem::remove(out);
  entries.erase(entries.begin());
  return entries;
}

std::vector<int32_t> long_prompt(int length, int stride) {
  std::vector<int32_t> p{1};
  for (int i = 1; i < length; ++i) p.push_back(3 + (i * stride) % 500);
  return p;
}

generate_request scored(std::string id, std::vector<int32_t> prompt, int max_tokens = 4) {
  generate_request r = testing::ids_request(std::move(id), std::move(prompt), max_tokens);
  r.params.prompt_logprobs = num_top;
  return r;
}

/// `got` (one choice's merged output) against the reference, token by token.
void expect_reference(const request_output& got, const nlohmann::json& want,
                      const std::string& what) {
  ASSERT_EQ(got.prompt_logprobs.size(), want.size()) << what;
  ASSERT_EQ(got.prompt_token_texts.size(), want.size() + 1) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const token_logprob& lp = got.prompt_logprobs[i];
    const auto& w = want[i];
    const std::string at = what + ", prompt token " + std::to_string(i + 1);
    EXPECT_EQ(lp.token_id, w["token"].get<int32_t>()) << at;
    EXPECT_NEAR(lp.logprob, w["logprob"].get<double>(), 1e-4) << at;
    ASSERT_EQ(lp.top_ids.size(), static_cast<size_t>(num_top)) << at;
    ASSERT_EQ(lp.top_texts.size(), static_cast<size_t>(num_top)) << at;
    for (int k = 0; k < num_top; ++k) {
      EXPECT_NEAR(lp.top_logprobs[k], w["top"][k][1].get<double>(), 1e-4) << at << " top " << k;
      // Ids may swap only where float32 cannot tell two logprobs apart.
      if (k + 1 < num_top &&
          std::abs(w["top"][k][1].get<double>() - w["top"][k + 1][1].get<double>()) > 1e-4) {
        EXPECT_EQ(lp.top_ids[k], w["top"][k][0].get<int32_t>()) << at << " top " << k;
      }
    }
    EXPECT_GE(lp.rank, w["rank_range"][0].get<int32_t>()) << at;
    EXPECT_LE(lp.rank, w["rank_range"][1].get<int32_t>()) << at;
  }
}

void expect_all_blocks_back(const llm_engine& engine) {
  EXPECT_EQ(engine.stats().device.num_used, 0);
  EXPECT_EQ(engine.stats().cpu.num_used, 0);
}

TEST(prompt_logprobs_engine, every_prompt_token_equals_the_float64_reference) {
  const auto prompt = long_prompt(41, 53);
  const auto want = reference_prompt_logprobs(prompt);
  llm_engine engine(engine_setup::load(testing::stories_config(256, 64)));
  const auto out = run_to_completion(engine, {scored("alone", prompt)})[0][0];
  expect_reference(out, want, "alone");
  EXPECT_EQ(out.token_ids.size(), 4u);  // generation goes on as asked
  EXPECT_EQ(out.num_cached_tokens, 0);
  expect_all_blocks_back(engine);
}

TEST(prompt_logprobs_engine, chunked_prefill_beside_other_requests_keeps_every_logprob) {
  const auto a = long_prompt(37, 29), b = long_prompt(23, 71);
  auto c = testing::stories_config(256, 64);
  c.scheduler.max_num_batched_tokens = 7;
  llm_engine engine(engine_setup::load(c));
  auto n2 = scored("b", b);
  n2.params.n = 2;
  n2.params.temperature = 1.0f;
  n2.params.seed = 7;
  const auto out =
      run_to_completion(engine, {testing::ids_request("story", {1, 403}, 20), scored("a", a), n2});
  expect_reference(out[1][0], reference_prompt_logprobs(a), "chunked a");
  const auto want_b = reference_prompt_logprobs(b);
  ASSERT_EQ(out[2].size(), 2u);
  expect_reference(out[2][0], want_b, "chunked b, choice 0");
  expect_reference(out[2][1], want_b, "chunked b, choice 1");
  EXPECT_EQ(out[0][0].token_ids.size(), 20u);
  EXPECT_TRUE(out[0][0].prompt_logprobs.empty());  // asked by none but those two
  expect_all_blocks_back(engine);
}

TEST(prompt_logprobs_engine, a_cached_prefix_is_computed_again_for_its_logprobs) {
  const auto prompt = long_prompt(45, 31);
  auto c = testing::stories_config(256, 64);
  c.cache.block_size = 8;
  llm_engine engine(engine_setup::load(c));
  // The first 40 tokens in the cache, then the whole prompt scored.
  const std::vector<int32_t> prefix(prompt.begin(), prompt.begin() + 40);
  const auto warm = run_to_completion(engine, {testing::ids_request("warm", prefix, 1)})[0][0];
  const auto hit = run_to_completion(engine, {testing::ids_request("hit", prompt, 1)})[0][0];
  ASSERT_GE(hit.num_cached_tokens, 32);  // the prefix is there
  const auto out = run_to_completion(engine, {scored("scored", prompt)})[0][0];
  expect_reference(out, reference_prompt_logprobs(prompt), "after a cache hit");
  EXPECT_EQ(out.num_cached_tokens, 0);
  // Its blocks still serve others.
  const auto after = run_to_completion(engine, {testing::ids_request("after", prompt, 1)})[0][0];
  EXPECT_GE(after.num_cached_tokens, 40);
  EXPECT_EQ(warm.finish, finish_reason::length);
  expect_all_blocks_back(engine);
}

TEST(prompt_logprobs_engine, a_preempted_prefill_sends_each_logprob_once) {
  const auto prompt = long_prompt(60, 37);
  const auto want = reference_prompt_logprobs(prompt);
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = testing::stories_config(16, 64);  // 128 tokens: two sequences of about 60
    c.scheduler.max_num_batched_tokens = 8;
    c.scheduler.preemption = mode;
    c.cache.block_size = 8;
    c.model.max_model_len = 128;
    llm_engine engine(engine_setup::load(c));
    std::vector<generate_request> requests;
    for (int i = 0; i < 4; ++i)
      requests.push_back(testing::ids_request("g" + std::to_string(i), {1}, 60));
    for (int i = 0; i < 2; ++i) requests.push_back(scored("s" + std::to_string(i), prompt));
    const auto out = run_to_completion(engine, requests);
    for (int i = 0; i < 2; ++i)
      expect_reference(out[4 + i][0], want, std::string(to_string(mode)) + " " + std::to_string(i));
    EXPECT_GT(engine.stats().num_preemptions, 0) << to_string(mode);
    expect_all_blocks_back(engine);
  }
}

TEST(prompt_logprobs_engine, echo_without_generation_returns_the_prompt_alone) {
  llm_engine engine(engine_setup::load(testing::stories_config(256, 64)));
  auto r = scored("echo", {1, 403, 407, 261, 378});
  r.echo = true;
  r.echo_without_generation = true;
  r.params.max_tokens = 1;
  const auto out = run_to_completion(engine, {r})[0][0];
  EXPECT_TRUE(out.token_ids.empty());
  EXPECT_TRUE(out.logprobs.empty());
  EXPECT_EQ(out.num_generated_tokens, 0);
  ASSERT_EQ(out.prompt_token_texts.size(), 5u);
  EXPECT_EQ(out.prompt_token_texts[0], "<s>");  // named, though the text skips it
  std::string joined;
  for (size_t i = 1; i < out.prompt_token_texts.size(); ++i) joined += out.prompt_token_texts[i];
  EXPECT_EQ(out.text, joined);  // the echoed prompt, nothing after it
  EXPECT_EQ(out.prompt_logprobs.size(), 4u);
}

}  // namespace
}  // namespace actorllm
