// Every family through the engine (scheduler, block manager, model runner, sampler) on a
// pool small enough to preempt: batched, chunked and preempted runs, by recompute and by
// swap, give each request exactly the tokens it gets alone, and every block comes back. The
// windowed model also shows its blocks released as the window moves. Speculative decoding
// (n-gram lookup, the model as its own draft) gives the same tokens on every family.
#include <gtest/gtest.h>

#include "actors/offline_engine/llm_engine.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

struct family {
  std::string name;
  std::string args;
  int64_t num_blocks = 16;  ///< of 8 tokens: 128 for 12 requests of up to 100
};

void PrintTo(const family& f, std::ostream* out) {
  *out << f.name;
}

engine_config config_for(const std::filesystem::path& model) {
  engine_config c = testing::stories_config(256, 64);
  c.model.model = model.string();
  c.model.max_model_len = 128;
  c.cache.block_size = 8;
  return c;
}

class model_families_engine : public ::testing::TestWithParam<family> {};

TEST_P(model_families_engine, batched_chunked_and_preempted_runs_match_alone) {
  const testing::random_model model(GetParam().name, GetParam().args);
  const auto requests = testing::varied_requests(12, 40, 60, "r");
  const auto alone = testing::solo_tokens(config_for(model.dir()), requests);
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = config_for(model.dir());
    c.scheduler.max_num_batched_tokens = 7;  // chunked prefill
    c.scheduler.preemption = mode;
    c.cache.num_gpu_blocks_override = GetParam().num_blocks;
    llm_engine engine(engine_setup::load(c));
    testing::expect_preempted_run_matches_alone(engine, run_to_completion(engine, requests), alone,
                                                mode);
  }
  // Speculative decoding, by n-gram lookup and with the model as its own draft, changes no
  // token either (swap preemption, chunked prefill).
  for (const auto method : {speculative_method::ngram, speculative_method::draft_model}) {
    auto c = config_for(model.dir());
    c.scheduler.max_num_batched_tokens = 7;
    c.scheduler.preemption = preemption_mode::swap;
    c.cache.num_gpu_blocks_override = GetParam().num_blocks;
    c.speculative = method == speculative_method::ngram
                        ? testing::ngram_speculation(3)
                        : testing::draft_speculation(model.dir().string(), 3);
    llm_engine engine(engine_setup::load(c));
    // (Accepted drafts may end requests before the pool runs short: no preemption required.)
    const auto out = run_to_completion(engine, requests);
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(out[i][0].token_ids, alone[i]) << i;
    EXPECT_EQ(engine.stats().device.num_used, 0);
    EXPECT_EQ(engine.stats().cpu.num_used, 0);
    // A random model's text need not repeat itself within 40 tokens; its own draft is right.
    const auto spec = engine.stats().speculation;
    if (method == speculative_method::draft_model) {
      EXPECT_GT(spec.num_accepted_tokens, spec.num_draft_tokens / 2);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    architectures, model_families_engine,
    ::testing::Values(
        family{"qwen3", "--arch qwen3"}, family{"phi3", "--arch phi3"},
        // A windowed sequence holds 3 blocks at most: fewer blocks for the same pressure.
        family{"mistral_window", "--arch mistral --sliding-window 12", 8},
        family{"gemma2", "--arch gemma2"}, family{"gemma3", "--arch gemma3"},
        family{"mixtral", "--arch mixtral"}, family{"qwen2_moe", "--arch qwen2_moe"},
        family{"qwen3_moe", "--arch qwen3_moe"}),
    [](const auto& info) { return info.param.name; });

TEST(model_families_engine, a_windowed_model_holds_only_its_window_of_blocks) {
  const testing::random_model windowed("mistral_window_blocks",
                                       "--arch mistral --sliding-window 12");
  const testing::random_model full("mistral_full_blocks", "--arch mistral --sliding-window 0");
  for (const auto* m : {&windowed, &full}) {
    llm_engine engine(engine_setup::load(config_for(m->dir())));
    engine.add_request(testing::ids_request("long", {1, 5, 9}, 100));
    int32_t most_used = 0;
    while (engine.has_work()) {
      engine.step();
      most_used = std::max(most_used, engine.stats().device.num_used);
    }
    if (m == &windowed) {
      EXPECT_LE(most_used, 3) << "12-token window over blocks of 8";
    } else {
      EXPECT_EQ(most_used, 13) << "103 tokens over blocks of 8";
    }
    EXPECT_EQ(engine.stats().device.num_used, 0);
  }
}

}  // namespace
}  // namespace actorllm
