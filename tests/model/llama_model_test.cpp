// The CPU Llama forward against the golden greedy continuation of stories260K, and the
// batching invariants: a prompt gives the same tokens alone, in a batch, and chunked.
#include "model/llama_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

int32_t argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

/// Greedy decoding of several prompts at once; each sequence owns a disjoint range of blocks.
/// Prompts are prefilled in chunks of `chunk` tokens (0: whole), then decoded together.
std::vector<std::vector<int32_t>> greedy_batch(llama_model& model,
                                               const std::vector<std::vector<int32_t>>& prompts,
                                               int max_tokens, int chunk,
                                               kv_cache_dtype dtype = kv_cache_dtype::float32) {
  const int32_t block_size = 16, blocks_per_seq = 32;
  kv_cache cache(model.cache_shape(blocks_per_seq * prompts.size(), block_size, dtype));
  std::vector<std::vector<int32_t>> tables(prompts.size()), outputs(prompts.size());
  std::vector<std::vector<int32_t>> tokens = prompts;
  std::vector<int32_t> computed(prompts.size(), 0);
  for (size_t s = 0; s < prompts.size(); ++s) {
    tables[s].resize(blocks_per_seq);
    std::iota(tables[s].begin(), tables[s].end(), static_cast<int32_t>(s * blocks_per_seq));
  }
  forward_batch batch;
  std::vector<float> logits;
  forward_workspace ws;
  const int64_t vocab = model.config().vocab_size;
  while (true) {
    batch.clear();
    std::vector<size_t> sampled;
    for (size_t s = 0; s < prompts.size(); ++s) {
      if (static_cast<int>(outputs[s].size()) >= max_tokens) continue;
      int32_t remaining = static_cast<int32_t>(tokens[s].size()) - computed[s];
      const int32_t take = chunk > 0 ? std::min(remaining, chunk) : remaining;
      const bool sample = take == remaining;
      batch.add_sequence(std::span(tokens[s]).subspan(computed[s], take), computed[s], tables[s],
                         block_size, sample);
      computed[s] += take;
      if (sample) sampled.push_back(s);
    }
    if (batch.num_seqs() == 0) break;
    batch.finalize();
    model.forward(batch, cache, ws, logits);
    for (size_t i = 0; i < sampled.size(); ++i) {
      const int32_t next = argmax(logits.data() + i * vocab, vocab);
      outputs[sampled[i]].push_back(next);
      tokens[sampled[i]].push_back(next);
    }
  }
  return outputs;
}

nlohmann::json golden() {
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  return nlohmann::json::parse(in);
}

TEST(llama_model, stories260k_golden_greedy) {
  llama_model model(testing::stories260k_dir());
  const auto g = golden();
  const auto out = greedy_batch(model, {g["prompt_token_ids"].get<std::vector<int32_t>>()}, 120, 0);
  EXPECT_EQ(out[0], g["output_token_ids"].get<std::vector<int32_t>>());
}

TEST(llama_model, same_tokens_alone_batched_and_chunked) {
  llama_model model(testing::stories260k_dir());
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) {
    std::vector<int32_t> p{1};
    for (int j = 0; j < 3 + (i * 7) % 40; ++j) p.push_back(3 + (i * 31 + j * 17) % 500);
    prompts.push_back(p);
  }
  const auto batched = greedy_batch(model, prompts, 24, 0);
  const auto chunked = greedy_batch(model, prompts, 24, 7);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto alone = greedy_batch(model, {prompts[i]}, 24, 0);
    EXPECT_EQ(alone[0], batched[i]) << "prompt " << i;
    EXPECT_EQ(alone[0], chunked[i]) << "prompt " << i;
  }
}

/// The golden prompt continued by its golden output, one prefill of 121 positions: the logits at
/// every position, from a float32 cache ([0]) and a cache of `dtype` ([1]).
std::array<std::vector<float>, 2> golden_logits(const llama_model& model, kv_cache_dtype dtype) {
  const auto g = golden();
  std::vector<int32_t> long_prompt = g["prompt_token_ids"].get<std::vector<int32_t>>();
  for (int32_t t : g["output_token_ids"].get<std::vector<int32_t>>()) long_prompt.push_back(t);
  std::array<std::vector<float>, 2> logits;
  for (int which = 0; which < 2; ++which) {
    kv_cache cache(model.cache_shape(16, 16, which ? dtype : kv_cache_dtype::float32));
    std::vector<int32_t> table(16);
    std::iota(table.begin(), table.end(), 0);
    forward_batch batch;
    batch.add_sequence(long_prompt, 0, table, 16, true);
    for (size_t i = 0; i + 1 < long_prompt.size(); ++i) batch.logits_indices.push_back(i);
    batch.finalize();
    forward_workspace ws;
    model.forward(batch, cache, ws, logits[which]);
  }
  return logits;
}

TEST(llama_model, float16_cache_stays_close_and_keeps_the_batching_invariants) {
  llama_model model(testing::stories260k_dir());
  const auto g = golden();
  const auto prompt = g["prompt_token_ids"].get<std::vector<int32_t>>();
  const auto logits = golden_logits(model, kv_cache_dtype::float16);
  ASSERT_EQ(logits[0].size(), logits[1].size());
  float max_diff = 0;
  for (size_t i = 0; i < logits[0].size(); ++i)
    max_diff = std::max(max_diff, std::abs(logits[0][i] - logits[1][i]));
  EXPECT_GT(max_diff, 0.0f) << "the float16 cache was not used";
  EXPECT_LT(max_diff, 0.05f);

  // On this model the rounding changes no greedy choice.
  const auto out = greedy_batch(model, {prompt}, 120, 0, kv_cache_dtype::float16);
  EXPECT_EQ(out[0], g["output_token_ids"].get<std::vector<int32_t>>());
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) prompts.push_back({1, 3 + i * 11, 40 + i, 7});
  const auto batched = greedy_batch(model, prompts, 16, 0, kv_cache_dtype::float16);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(greedy_batch(model, {prompts[i]}, 16, 0, kv_cache_dtype::float16)[0], batched[i]);
}

TEST(llama_model, float8_cache_stays_close_and_keeps_the_batching_invariants) {
  llama_model model(testing::stories260k_dir());
  const auto logits = golden_logits(model, kv_cache_dtype::float8);
  // The next-token distributions of 120 positions, float8 against float32: KL per position.
  const int64_t vocab = model.config().vocab_size;
  double worst_kl = 0, total_kl = 0;
  int same_argmax = 0, positions = 0;
  for (size_t at = 0; at < logits[0].size(); at += vocab, ++positions) {
    const float* p = logits[0].data() + at;
    const float* q = logits[1].data() + at;
    const double mp = *std::max_element(p, p + vocab), mq = *std::max_element(q, q + vocab);
    double zp = 0, zq = 0;
    for (int64_t i = 0; i < vocab; ++i) zp += std::exp(p[i] - mp), zq += std::exp(q[i] - mq);
    double kl = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      const double lp = p[i] - mp - std::log(zp), lq = q[i] - mq - std::log(zq);
      kl += std::exp(lp) * (lp - lq);
    }
    worst_kl = std::max(worst_kl, kl);
    total_kl += kl;
    same_argmax += argmax(p, vocab) == argmax(q, vocab);
  }
  const double mean_kl = total_kl / positions;
  RecordProperty("float8_worst_kl", std::to_string(worst_kl));
  RecordProperty("float8_mean_kl", std::to_string(mean_kl));
  std::printf(
      "float8 KV cache: KL to float32 %.4f mean, %.4f worst over %d positions; %d same "
      "argmax\n",
      mean_kl, worst_kl, positions, same_argmax);
  EXPECT_GT(worst_kl, 0.0) << "the float8 cache was not used";
  EXPECT_LT(mean_kl, 0.02);
  EXPECT_LT(worst_kl, 0.2);
  EXPECT_GE(same_argmax, positions * 95 / 100) << same_argmax << " of " << positions;
  // Batched, float8 gives each prompt what it gives alone.
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) prompts.push_back({1, 3 + i * 11, 40 + i, 7});
  const auto batched = greedy_batch(model, prompts, 16, 0, kv_cache_dtype::float8);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(greedy_batch(model, {prompts[i]}, 16, 0, kv_cache_dtype::float8)[0], batched[i]);
}

TEST(llama_model, missing_folder_is_a_clear_error) {
  try {
    llama_model model("/nonexistent/model");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

/// Two shards on two threads, summing through a host all-reduce, decode the golden greedy.
TEST(llama_model, tensor_parallel_shards_reproduce_the_golden) {
  const auto g = golden();
  std::vector<std::unique_ptr<llama_model>> shards;
  for (int32_t r = 0; r < 2; ++r)
    shards.push_back(std::make_unique<llama_model>(testing::stories260k_dir(), tp_shard{r, 2}));
  EXPECT_EQ(shards[0]->config().num_heads, 4);
  EXPECT_EQ(shards[1]->config().num_kv_heads, 2);
  cpu::host_all_reduce group(2);
  std::vector<std::vector<int32_t>> out(2);
  auto run = [&](int32_t rank) {
    std::vector<int32_t> tokens = g["prompt_token_ids"].get<std::vector<int32_t>>();
    kv_cache cache(shards[rank]->cache_shape(16, 16));
    std::vector<int32_t> table(16);
    std::iota(table.begin(), table.end(), 0);
    forward_workspace ws;
    ws.all_reduce = &group;
    ws.tp_rank = rank;
    forward_batch batch;
    std::vector<float> logits;
    int32_t computed = 0;
    for (int step = 0; step < 120; ++step) {
      batch.clear();
      const int32_t take = static_cast<int32_t>(tokens.size()) - computed;
      batch.add_sequence(std::span(tokens).subspan(computed, take), computed, table, 16, true);
      batch.finalize();
      shards[rank]->forward(batch, cache, ws, logits);
      computed += take;
      tokens.push_back(argmax(logits.data(), shards[rank]->config().vocab_size));
      out[rank].push_back(tokens.back());
    }
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  EXPECT_EQ(out[0], g["output_token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out[1], out[0]);
}

}  // namespace
}  // namespace actorllm
