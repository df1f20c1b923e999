// Multi-LoRA in the forward pass against merged weights: a random adapter on each target
// projection alone, and on all seven, gives the logits of the model with W + scaling · B · A
// as its weights (scripts/make_random_lora.py writes both); in one batch, rows of two adapters
// and of the base model each get their own model's logits, prefilled and decoded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/llama_model.hpp"
#include "model/lora_adapter.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

const std::vector<int32_t> prompt{1, 403, 407, 261, 378, 279, 422, 260, 341, 343, 310, 264, 280};

/// Logits of every prompt position, alone in a batch, through `adapter` (null: none).
std::vector<float> prompt_logits(const llama_model& model, const std::vector<int32_t>& tokens,
                                 const lora_adapter* adapter) {
  kv_cache cache(model.cache_shape(4, 16));
  const std::vector<int32_t> table{0, 1, 2, 3};
  forward_batch batch;
  batch.add_sequence(tokens, 0, table, 16, static_cast<int32_t>(tokens.size()));
  batch.use_adapter(adapter);
  batch.finalize();
  forward_workspace ws;
  std::vector<float> logits;
  model.forward(batch, cache, ws, logits);
  return logits;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
  return worst;
}

TEST(lora_forward, each_target_alone_and_all_together_equal_the_merged_weights) {
  const llama_model base(testing::stories260k_dir());
  const std::vector<float> plain = prompt_logits(base, prompt, nullptr);
  for (const std::string targets :
       {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
        "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"}) {
    SCOPED_TRACE(targets);
    testing::random_lora lora("forward", testing::stories260k_dir(),
                              "--rank 8 --targets " + targets);
    const lora_adapter adapter =
        lora_adapter::load("a", lora.adapter(), base.config(), /*max_rank=*/16);
    const llama_model merged(lora.merged());
    const std::vector<float> want = prompt_logits(merged, prompt, nullptr);
    const std::vector<float> got = prompt_logits(base, prompt, &adapter);
    // Float32 sums in another order: the merge rounds W + scaling · B · A once, the adapter adds
    // its update after the base projection. Seven targets compound it (3.7e-4 from clang -O1).
    EXPECT_LT(max_difference(got, want), 1e-3);
    // The adapter matters: the logits move by far more than the tolerance.
    EXPECT_GT(max_difference(got, plain), 1e-2);
  }
}

TEST(lora_forward, one_batch_of_two_adapters_and_the_base_gives_each_its_own_model) {
  const llama_model base(testing::stories260k_dir());
  testing::random_lora first("batch-1", testing::stories260k_dir(), "--rank 4 --seed 1");
  testing::random_lora second("batch-2", testing::stories260k_dir(),
                              "--rank 16 --seed 2 --targets q_proj,v_proj,down_proj");
  const lora_adapter a = lora_adapter::load("a", first.adapter(), base.config(), 16);
  const lora_adapter b = lora_adapter::load("b", second.adapter(), base.config(), 16);
  const llama_model merged_a(first.merged()), merged_b(second.merged());
  const llama_model* models[] = {&merged_a, &base, &merged_b};
  const lora_adapter* adapters[] = {&a, nullptr, &b};

  // Each sequence's greedy continuation, alone through its own (merged or base) model.
  const int steps = 8;
  auto greedy = [&](const llama_model& model, const lora_adapter* adapter, int s) {
    std::vector<int32_t> tokens(prompt.begin(), prompt.begin() + 6 + 3 * s);
    for (int i = 0; i < steps; ++i) {
      const std::vector<float> logits = prompt_logits(model, tokens, adapter);
      const float* last = logits.data() + (tokens.size() - 1) * model.config().vocab_size;
      tokens.push_back(
          static_cast<int32_t>(std::max_element(last, last + model.config().vocab_size) - last));
    }
    return tokens;
  };

  // All three in one batch: prompts of different lengths prefilled together, then decoded.
  kv_cache cache(base.cache_shape(12, 16));
  std::vector<std::vector<int32_t>> tokens, tables;
  for (int s = 0; s < 3; ++s) {
    tokens.emplace_back(prompt.begin(), prompt.begin() + 6 + 3 * s);
    tables.push_back({4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3});
  }
  std::vector<int32_t> computed(3, 0);
  forward_workspace ws;
  std::vector<float> logits;
  const int64_t vocab = base.config().vocab_size;
  for (int i = 0; i < steps; ++i) {
    forward_batch batch;
    for (int s = 0; s < 3; ++s) {
      const auto fresh = std::span(tokens[s]).subspan(computed[s]);
      batch.add_sequence(fresh, computed[s], tables[s], 16, true);
      batch.use_adapter(adapters[s]);
      computed[s] = static_cast<int32_t>(tokens[s].size());
    }
    batch.finalize();
    base.forward(batch, cache, ws, logits);
    for (int s = 0; s < 3; ++s) {
      const float* row = logits.data() + s * vocab;
      tokens[s].push_back(static_cast<int32_t>(std::max_element(row, row + vocab) - row));
    }
  }
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(tokens[s], greedy(*models[s], nullptr, s)) << "sequence " << s;
  // And the adapters change the continuation, or the comparison above proves nothing.
  EXPECT_NE(greedy(base, nullptr, 0), greedy(merged_a, nullptr, 0));
}

}  // namespace
}  // namespace actorllm
