// The actor-free spine with the real stories260K model: golden greedy output (ids and text),
// batching and chunking invariance, preemption in both modes, stop strings, seeds, n > 1.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/engine/llm_engine.hpp"
#include "tests/common/test_data.hpp"

namespace actorllm {
namespace {

engine_config base_config() {
  engine_config c;
  c.model.model = testing::stories260k_dir().string();
  c.cache.num_gpu_blocks_override = 256;
  c.cache.num_cpu_blocks_override = 256;
  c.parallel.cpu_threads = 1;
  return c;
}

nlohmann::json golden() {
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  return nlohmann::json::parse(in);
}

generate_request ids_request(std::string id, std::vector<int32_t> ids, int max_tokens) {
  generate_request r;
  r.request_id = std::move(id);
  r.kind = prompt_kind::token_ids;
  r.token_ids = std::move(ids);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

std::vector<generate_request> varied_requests(int count, int max_tokens) {
  std::vector<generate_request> rs;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> ids{1};
    for (int j = 0; j < 2 + (i * 13) % 60; ++j) ids.push_back(3 + (i * 37 + j * 11) % 500);
    rs.push_back(ids_request("r" + std::to_string(i), ids, max_tokens - i % 5));
  }
  return rs;
}

TEST(llm_engine, golden_greedy_ids_and_text) {
  llm_engine engine(engine_setup::load(base_config()));
  const auto g = golden();
  const auto out = run_to_completion(engine, {ids_request("g", {1}, 120)});
  ASSERT_EQ(out[0].size(), 1u);
  EXPECT_EQ(out[0][0].token_ids, g["output_token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out[0][0].text, g["output_text"].get<std::string>());
  EXPECT_EQ(out[0][0].finish, finish_reason::length);
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST(llm_engine, batched_chunked_and_preempted_runs_match_alone) {
  const auto requests = varied_requests(24, 40);
  std::vector<std::vector<int32_t>> alone;
  {
    llm_engine engine(engine_setup::load(base_config()));
    for (const auto& r : requests) alone.push_back(run_to_completion(engine, {r})[0][0].token_ids);
  }
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = base_config();
    c.scheduler.max_num_batched_tokens = 7;  // chunked prefill
    c.scheduler.preemption = mode;
    c.cache.num_gpu_blocks_override = 16;    // 128 tokens: forces preemption
    c.model.max_model_len = 128;
    c.cache.block_size = 8;
    llm_engine engine(engine_setup::load(c));
    const auto out = run_to_completion(engine, requests);
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(out[i][0].token_ids, alone[i]) << "request " << i << " mode " << to_string(mode);
    EXPECT_GT(engine.stats().num_preemptions, 0);
    EXPECT_EQ(engine.stats().device.num_used, 0);
    EXPECT_EQ(engine.stats().cpu.num_used, 0);
  }
}

TEST(llm_engine, stop_string_cuts_the_text_and_frees_blocks) {
  llm_engine engine(engine_setup::load(base_config()));
  auto r = ids_request("s", {1}, 120);
  r.params.stop = {"Lily."};
  const auto out = run_to_completion(engine, {r});
  EXPECT_EQ(out[0][0].text, "Once upon a time, there was a little girl named ");
  EXPECT_EQ(out[0][0].finish, finish_reason::stop);
  EXPECT_EQ(out[0][0].stop_reason, "Lily.");
  EXPECT_EQ(engine.stats().device.num_used, 0);
  EXPECT_FALSE(engine.has_work());
}

TEST(llm_engine, seeded_sampling_repeats_and_n_gives_n_choices) {
  llm_engine engine(engine_setup::load(base_config()));
  auto r = ids_request("a", {1}, 30);
  r.params.temperature = 1.0f;
  r.params.seed = 42;
  r.params.n = 3;
  auto r2 = r;
  r2.request_id = "b";
  const auto out = run_to_completion(engine, {r, r2});
  ASSERT_EQ(out[0].size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out[0][k].token_ids, out[1][k].token_ids);
    EXPECT_EQ(out[0][k].token_ids.size(), 30u);
  }
  EXPECT_NE(out[0][0].token_ids, out[0][1].token_ids);
}

TEST(llm_engine, refusals_are_values_with_statuses) {
  llm_engine engine(engine_setup::load(base_config()));
  auto too_long = ids_request("long", std::vector<int32_t>(600, 5), 10);
  auto bad = engine.add_request(too_long);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->error_status, 400);
  EXPECT_NE(bad->error.find("512"), std::string::npos);
  EXPECT_NE(bad->error.find("600"), std::string::npos);
  auto wrong_model = ids_request("m", {1}, 10);
  wrong_model.model = "gpt-4";
  EXPECT_EQ(engine.add_request(wrong_model)->error_status, 404);
}

}  // namespace
}  // namespace actorllm
