// The actor-free spine with the real stories260K model: golden greedy output (ids and text),
// batching and chunking invariance, preemption in both modes, stop strings, seeds, n > 1.
#include "actors/offline_engine/llm_engine.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/cpu/packed_linear.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::ids_request;

engine_config base_config() {
  return testing::stories_config(256, 256);
}

nlohmann::json golden() {
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  return nlohmann::json::parse(in);
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
  const auto requests = testing::varied_requests(24, 40, 60, "r");
  const auto alone = testing::solo_tokens(base_config(), requests);
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = base_config();
    c.scheduler.max_num_batched_tokens = 7;  // chunked prefill
    c.scheduler.preemption = mode;
    c.cache.num_gpu_blocks_override = 16;  // 128 tokens: forces preemption
    c.model.max_model_len = 128;
    c.cache.block_size = 8;
    llm_engine engine(engine_setup::load(c));
    testing::expect_preempted_run_matches_alone(engine, run_to_completion(engine, requests), alone,
                                                mode);
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

TEST(llm_engine, a_stop_token_ends_with_its_id_as_the_reason_and_without_its_text) {
  llm_engine engine(engine_setup::load(base_config()));
  const auto g = golden();
  const auto ids = g["output_token_ids"].get<std::vector<int32_t>>();
  auto r = ids_request("s", {1}, 120);
  r.params.stop_token_ids = {ids[4]};  // the fifth token of the greedy story
  const auto out = run_to_completion(engine, {r});
  EXPECT_EQ(out[0][0].finish, finish_reason::stop);
  EXPECT_EQ(out[0][0].stop_token, ids[4]);
  EXPECT_EQ(out[0][0].stop_reason, "");
  EXPECT_EQ(out[0][0].token_ids, std::vector<int32_t>(ids.begin(), ids.begin() + 5));
  EXPECT_EQ(out[0][0].text, engine.setup().tok.decode(std::span(ids).first(4), true));
}

TEST(llm_engine, include_stop_str_in_output_keeps_the_matched_stop_string) {
  llm_engine engine(engine_setup::load(base_config()));
  auto r = ids_request("s", {1}, 120);
  r.params.stop = {"Lily."};
  r.params.include_stop_str_in_output = true;
  const auto out = run_to_completion(engine, {r});
  EXPECT_EQ(out[0][0].text, "Once upon a time, there was a little girl named Lily.");
  EXPECT_EQ(out[0][0].stop_reason, "Lily.");
}

TEST(llm_engine, truncate_prompt_tokens_keeps_the_prompts_last_tokens) {
  llm_engine engine(engine_setup::load(base_config()));
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 11};
  auto truncated = ids_request("t", prompt, 12);
  truncated.params.truncate_prompt_tokens = 3;
  const auto tail = ids_request("tail", {261, 378, 11}, 12);
  const auto out = run_to_completion(engine, {truncated, tail});
  EXPECT_EQ(out[0][0].num_prompt_tokens, 3);
  EXPECT_EQ(out[0][0].token_ids, out[1][0].token_ids);
  auto whole = ids_request("w", prompt, 12);
  whole.params.truncate_prompt_tokens = 100;  // longer than the prompt: nothing to cut
  EXPECT_EQ(run_to_completion(engine, {whole})[0][0].num_prompt_tokens, 6);
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

TEST(llm_engine, logprobs_name_the_chosen_and_the_top_tokens_by_their_text) {
  llm_engine engine(engine_setup::load(base_config()));
  const tokenizer tok = tokenizer::load(testing::stories260k_dir());
  auto r = ids_request("lp", {1}, 6);
  r.params.logprobs = 3;
  const auto out = run_to_completion(engine, {r});
  const request_output& o = out[0][0];
  ASSERT_EQ(o.logprobs.size(), 6u);
  ASSERT_EQ(o.token_texts.size(), 6u);
  // Each text is what its token adds after the ones before it, so the texts add up to the
  // output and words keep their leading space ("Once upon a time,": " upon", not "upon").
  std::string joined;
  for (std::size_t i = 0; i < o.logprobs.size(); ++i) {
    const token_logprob& lp = o.logprobs[i];
    joined += o.token_texts[i];
    ASSERT_EQ(lp.top_ids.size(), 3u);
    // Not left for the API to print as "token_id:N".
    ASSERT_EQ(lp.top_texts.size(), 3u);
    EXPECT_EQ(lp.top_texts[0], o.token_texts[i]);  // greedy: the chosen token is the top one
  }
  EXPECT_EQ(joined, o.text);
  EXPECT_EQ(o.token_texts[1], " upon");
  EXPECT_EQ(tok.decode(std::span(&o.logprobs[1].token_id, 1), false), "upon");  // alone
}

TEST(llm_engine, refusals_are_values_with_statuses) {
  llm_engine engine(engine_setup::load(base_config()));
  auto too_long = ids_request("long", std::vector<int32_t>(600, 5), 10);
  auto bad = engine.add_request(too_long);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->error_status, 400);
  EXPECT_NE(bad->error.find("512"), std::string::npos);
  EXPECT_NE(bad->error.find("600"), std::string::npos);
  // A completion that cannot fit is refused (as vLLM does), not cut short at the context end.
  auto too_many = engine.add_request(ids_request("many", std::vector<int32_t>(10, 5), 503));
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->error_status, 400);
  EXPECT_NE(too_many->error.find("'max_tokens' is too large: 503"), std::string::npos)
      << too_many->error;
  EXPECT_FALSE(engine.add_request(ids_request("fits", std::vector<int32_t>(10, 5), 502)));
  auto wrong_model = ids_request("m", {1}, 10);
  wrong_model.model = "gpt-4";
  EXPECT_EQ(engine.add_request(wrong_model)->error_status, 404);
}

TEST(engine_setup,
     float32_panels_alone_are_made_at_load_a_copy_beside_float32_rows_as_the_engine_loads) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "this CPU lacks AVX2/FMA: nothing to pack";
  const llama_model model(testing::stories260k_dir());
  EXPECT_TRUE(model.packed_only());
  EXPECT_TRUE(model.has_cpu_weights());  // made by the constructor, not left for a request
  EXPECT_TRUE(model.weights().layers[0].qkv.empty());  // no float32 rows beside them
  EXPECT_TRUE(model.weights().embed.empty());
  // A model that keeps float32 rows (its experts read them) packs the rest lazily alone, and
  // the CPU engine packs it while it loads, not at the first request.
  const testing::random_model moe("setup_moe", "--arch mixtral");
  EXPECT_FALSE(llama_model(moe.dir()).has_cpu_weights());
  engine_config c = base_config();
  c.model.model = moe.dir().string();
  c.model.max_model_len = 128;
  const engine_setup setup = engine_setup::load(c);
  EXPECT_FALSE(setup.model->packed_only());
  EXPECT_TRUE(setup.model->has_cpu_weights());
}

TEST(engine_setup, a_tokenizer_with_ids_beyond_the_embedding_table_is_refused_at_load) {
  engine_config c = base_config();
  c.model.tokenizer = (testing::shared_dir() / "tokenizers" / "llama2").string();  // 32,000 ids
  try {
    engine_setup::load(c);
    FAIL() << "a 32,000-token tokenizer was accepted for a 512-row embedding table";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the model's vocab_size 512"), std::string::npos)
        << e.what();
  }
}

TEST(engine_setup, served_under_the_folder_name_and_the_model_argument_as_given) {
  engine_config c = base_config();
  c.model.model = (testing::stories260k_dir() / ".").string();  // as a user might type it
  const engine_setup plain = engine_setup::load(c);
  EXPECT_EQ(plain.served_model_name, "stories260K");
  EXPECT_EQ(plain.model_aliases, std::vector<std::string>{c.model.model});  // vLLM's name
  c.model.model = testing::stories260k_dir().string() + "/";  // as shell completion leaves it
  EXPECT_EQ(engine_setup::load(c).served_model_name, "stories260K");
  c.model.served_model_name = "tiny";  // an explicit name is the only one, as in vLLM
  EXPECT_TRUE(engine_setup::load(c).model_aliases.empty());
}

}  // namespace
}  // namespace actorllm
