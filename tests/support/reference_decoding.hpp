#pragma once
/// A model's decoder run against a reference's greedy decoding: the prompt prefilled in chunks
/// over the paged KV cache, then the reference's tokens fed back one at a time, each sampled
/// step's logits compared with the reference's. The caller adds what a chunk's rows need
/// besides their tokens (an image's embedding rows, its spans, M-RoPE positions).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <span>
#include <vector>

#include "model/kv_cache.hpp"
#include "model/llama_model.hpp"
#include "tests/support/reference_runs.hpp"

namespace actorllm::testing {

struct reference_greedy {
  const std::vector<int32_t>& prompt;
  const std::vector<int32_t>& tokens;
  const std::vector<std::vector<float>>& logits;  ///< per generated token
  const std::vector<double>& margins;             ///< top-1 minus top-2 per generated token
};

/// Adds the inputs of positions first .. first + count - 1 to `batch` (their tokens are in).
using chunk_inputs = std::function<void(int32_t first, int32_t count, forward_batch& batch)>;

/// Every step's logits within 1e-4 of the largest reference logit, and our argmax the
/// reference's token wherever its margin is clear (more than half the steps).
inline void expect_greedy_run_matches(const llama_model& model, const reference_greedy& ref,
                                      int32_t chunk, const chunk_inputs& add_inputs) {
  const int32_t block_size = 8;
  const auto total = static_cast<int32_t>(ref.prompt.size() + ref.tokens.size());
  const int32_t num_blocks = (total + block_size - 1) / block_size;
  kv_cache cache(model.cache_shape(num_blocks, block_size));
  std::vector<int32_t> table(num_blocks);
  std::iota(table.rbegin(), table.rend(), 0);
  std::vector<int32_t> tokens = ref.prompt;
  forward_batch batch;
  forward_workspace ws;
  std::vector<float> logits;
  int32_t computed = 0, agreeing = 0, decisive = 0;
  size_t step = 0;
  while (step < ref.tokens.size()) {
    const int32_t take = std::min(static_cast<int32_t>(tokens.size()) - computed, chunk);
    const bool sample = computed + take == static_cast<int32_t>(tokens.size());
    batch.clear();
    batch.add_sequence(std::span(tokens).subspan(computed, take), computed, table, block_size,
                       sample);
    add_inputs(computed, take, batch);
    batch.finalize();
    model.forward(batch, cache, ws, logits);
    computed += take;
    if (!sample) continue;
    const std::vector<float> ours(logits.begin(), logits.begin() + model.config().vocab_size);
    EXPECT_LE(relative_error(ours, ref.logits[step]), 1e-4f) << "step " << step;
    if (ref.margins[step] > 1e-3) {
      ++decisive;
      agreeing += std::max_element(ours.begin(), ours.end()) - ours.begin() == ref.tokens[step];
    }
    tokens.push_back(ref.tokens[step++]);
  }
  EXPECT_EQ(agreeing, decisive) << "greedy tokens where the margin is clear";
  EXPECT_GT(decisive, static_cast<int32_t>(ref.tokens.size()) / 2);
}

}  // namespace actorllm::testing
