// Multi-LoRA serving on the actor-free engine with stories260K and random adapters
// (scripts/make_random_lora.py): four adapters and the base model in one batch each give
// what the model with that adapter merged into its weights gives alone; the prefix cache
// never hands one adapter's KV to another; adapters survive preemption by swap and by
// recompute; adapters unloaded and loaded while requests run lose none of them; and bad
// adapters are refused at startup with a line naming them.
#include <gtest/gtest.h>

#include <memory>

#include "actors/offline_engine/llm_engine.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

constexpr int num_adapters = 4;

/// Four random adapters of stories260K (ranks 4 to 16, different targets) and their merges.
class lora_engine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* args[num_adapters] = {"--rank 8 --seed 1",
                                      "--rank 4 --seed 2 --targets q_proj,v_proj",
                                      "--rank 16 --seed 3 --targets gate_proj,up_proj,down_proj",
                                      "--rank 8 --seed 4 --targets o_proj,k_proj,down_proj"};
    for (int i = 0; i < num_adapters; ++i)
      loras_[i] = std::make_unique<testing::random_lora>("engine-" + std::to_string(i),
                                                         testing::stories260k_dir(), args[i]);
  }
  static void TearDownTestSuite() {
    for (auto& l : loras_) l.reset();
  }

  static std::string name(int i) { return "adapter" + std::to_string(i); }

  /// stories260K serving every adapter, at most `max_loras` of them in one batch.
  static engine_config serving(int64_t device_blocks, int64_t cpu_blocks, int32_t max_loras = 4) {
    engine_config c = testing::stories_config(device_blocks, cpu_blocks);
    c.lora.enable_lora = true;
    c.lora.max_loras = max_loras;
    for (int i = 0; i < num_adapters; ++i) c.lora.modules.push_back({name(i), path(i)});
    return c;
  }
  static std::string path(int i) { return loras_[i]->adapter().string(); }

  /// Requests over the base model (model "") and each adapter in turn.
  static std::vector<generate_request> mixed(int count, int max_tokens) {
    auto requests = testing::varied_requests(count, max_tokens, 20, "r");
    for (int i = 0; i < count; ++i)
      requests[i].model = i % (num_adapters + 1) == 0 ? "" : name(i % (num_adapters + 1) - 1);
    return requests;
  }

  /// Each request alone on the model with its adapter merged (or on the base model).
  static std::vector<std::vector<int32_t>> merged_alone(const std::vector<generate_request>& rs) {
    std::vector<std::vector<int32_t>> alone;
    for (auto r : rs) {
      engine_config c = testing::stories_config(256, 0);
      if (!r.model.empty()) c.model.model = loras_[r.model.back() - '0']->merged().string();
      r.model.clear();
      alone.push_back(testing::solo_tokens(c, {r})[0]);
    }
    return alone;
  }

  static std::unique_ptr<testing::random_lora> loras_[num_adapters];
};

std::unique_ptr<testing::random_lora> lora_engine::loras_[num_adapters];

TEST_F(lora_engine, four_adapters_and_the_base_in_one_batch_each_give_their_merged_model) {
  const auto requests = mixed(10, 24);
  const auto alone = merged_alone(requests);
  llm_engine engine(engine_setup::load(serving(256, 0)));
  const auto out = run_to_completion(engine, requests);
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(out[i][0].token_ids, alone[i])
        << "request " << i << " on '" << requests[i].model << "'";
  // The adapters change the tokens, or the comparison proves nothing.
  auto on_base = requests[1];
  on_base.model.clear();
  EXPECT_NE(testing::solo_tokens(testing::stories_config(256, 0), {on_base})[0], alone[1]);
  EXPECT_EQ(engine.stats().device.num_used, 0);
}

TEST_F(lora_engine, the_prefix_cache_keeps_each_adapters_kv_apart) {
  llm_engine engine(engine_setup::load(serving(256, 0)));
  std::vector<int32_t> prompt{1};  // three full blocks of 16 to hit, and some
  for (int j = 0; j < 50; ++j) prompt.push_back(3 + (j * 37) % 500);
  auto run = [&](const std::string& id, const std::string& model) {
    auto r = testing::ids_request(id, prompt, 12);
    r.model = model;
    return run_to_completion(engine, {r})[0][0];
  };
  const request_output base = run("base", "");
  const request_output first = run("first", name(0));
  const request_output again = run("again", name(0));
  const request_output other = run("other", name(1));
  EXPECT_EQ(first.num_cached_tokens, 0) << "the base model's KV served an adapter";
  EXPECT_GT(again.num_cached_tokens, 0) << "an adapter's own KV was not reused";
  EXPECT_EQ(other.num_cached_tokens, 0) << "one adapter's KV served another";
  EXPECT_EQ(again.token_ids, first.token_ids);
  EXPECT_NE(first.token_ids, base.token_ids);
  const auto alone = merged_alone({[&] {
    auto r = testing::ids_request("x", prompt, 12);
    r.model = name(1);
    return r;
  }()});
  EXPECT_EQ(other.token_ids, alone[0]);
}

TEST_F(lora_engine, adapters_survive_preemption_by_swap_and_by_recompute) {
  const auto requests = mixed(10, 60);
  const auto alone = merged_alone(requests);
  for (preemption_mode mode : {preemption_mode::swap, preemption_mode::recompute}) {
    engine_config c = serving(16, 64);
    c.scheduler.preemption = mode;
    c.scheduler.max_num_batched_tokens = 9;  // chunked prefill too
    c.model.max_model_len = 128;  // 16 blocks of 8: ten requests of up to 80 tokens preempt
    c.cache.block_size = 8;
    llm_engine engine(engine_setup::load(c));
    testing::expect_preempted_run_matches_alone(engine, run_to_completion(engine, requests), alone,
                                                mode);
  }
}

TEST_F(lora_engine, max_loras_one_still_serves_every_adapter) {
  const auto requests = mixed(10, 16);
  llm_engine engine(engine_setup::load(serving(256, 0, /*max_loras=*/1)));
  const auto out = run_to_completion(engine, requests);
  const auto alone = merged_alone(requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(out[i][0].token_ids, alone[i]);
}

TEST_F(lora_engine, unloading_and_loading_while_requests_run_loses_none) {
  engine_config c = serving(256, 0);
  c.lora.modules.resize(2);  // adapter0 and adapter1 at start
  llm_engine engine(engine_setup::load(c));
  lora_registry& loras = *engine.setup().loras;
  const auto requests = mixed(10, 40);
  auto started = requests;
  started.resize(5);  // base, adapter0 .. adapter3: adapters 2 and 3 are not loaded yet
  std::map<std::string, std::vector<int32_t>> tokens;
  auto collect = [&](const std::vector<request_output>& outs) {
    for (const auto& o : outs)
      tokens[o.request_id].insert(tokens[o.request_id].end(), o.token_ids.begin(),
                                  o.token_ids.end());
  };
  for (const auto& r : started) {
    const auto refused = engine.add_request(r);
    if (r.model == name(2) || r.model == name(3)) {
      ASSERT_TRUE(refused.has_value());
      EXPECT_EQ(refused->error_status, 404);
    } else {
      EXPECT_FALSE(refused.has_value()) << r.request_id;
    }
  }
  for (int i = 0; i < 5; ++i) collect(engine.step());
  // Under load: adapter0 goes (its request runs on), adapter2 comes.
  EXPECT_TRUE(loras.unload(name(0)));
  loras.load(name(2), path(2));
  auto late = testing::ids_request("late", requests[3].token_ids, 40);
  late.model = name(2);
  EXPECT_FALSE(engine.add_request(late).has_value());
  auto gone = late;
  gone.request_id = "gone";
  gone.model = name(0);
  const auto refused = engine.add_request(gone);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error_status, 404);
  while (engine.has_work()) collect(engine.step());

  auto as_merged = requests;
  as_merged.resize(2);
  as_merged.push_back(late);
  const auto alone = merged_alone(as_merged);
  EXPECT_EQ(tokens["r0"], alone[0]);
  EXPECT_EQ(tokens["r1"], alone[1]) << "adapter0's request, unloaded while it ran";
  EXPECT_EQ(tokens["late"], alone[2]);
  EXPECT_EQ(engine.stats().device.num_used, 0);
  // Nobody holds adapter0 (the first loaded, id 1) now: its weights are gone.
  EXPECT_EQ(loras.find(name(0)), nullptr);
  EXPECT_EQ(loras.get(1), nullptr);
  EXPECT_NE(loras.get(2), nullptr);
}

TEST_F(lora_engine, bad_adapters_are_refused_at_startup_by_name) {
  auto refusal = [](engine_config c) {
    try {
      engine_setup::load(c);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  engine_config missing = serving(64, 0);
  missing.lora.modules.push_back({"ghost", "/nonexistent/adapter"});
  EXPECT_NE(refusal(missing).find("--lora-modules"), std::string::npos) << refusal(missing);
  EXPECT_NE(refusal(missing).find("ghost"), std::string::npos) << refusal(missing);
  engine_config too_wide = serving(64, 0);
  too_wide.lora.max_lora_rank = 8;  // adapter2 has rank 16
  EXPECT_NE(refusal(too_wide).find("rank"), std::string::npos) << refusal(too_wide);
  engine_config parallel = serving(64, 0);
  parallel.parallel.tensor_parallel_size = 2;
  EXPECT_NE(refusal(parallel).find("tensor-parallel"), std::string::npos) << refusal(parallel);
}

}  // namespace
}  // namespace actorllm
