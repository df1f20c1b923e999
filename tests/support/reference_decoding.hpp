#pragma once
/// A model's decoder run against a reference's greedy decoding: the prompt prefilled in chunks
/// over the paged KV cache, then the reference's tokens fed back one at a time, each sampled
/// step's logits compared with the reference's. The caller adds what a chunk's rows need
/// besides their tokens (an image's embedding rows, its spans, M-RoPE positions).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <span>
#include <string>
#include <utility>
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

/// A run of tests/reference/vision_reference.py (--out DIR/ref.json --pixels-out DIR/pixels):
/// the expanded prompt, the greedy tokens with their logits and margins, and each image's
/// positions, tower features and preprocessed pixels.
struct vision_reference_run {
  std::filesystem::path dir;
  std::vector<int32_t> prompt, tokens;
  std::vector<std::pair<int32_t, int32_t>> image_ranges;  ///< (start, length)
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<float>> features;  ///< per image, its rows flat
  std::vector<double> margins;
  std::vector<std::vector<float>> pixels;  ///< per image, as --pixels-out wrote them
  nlohmann::json json;                     ///< the whole output, for architecture's own fields

  reference_greedy greedy() const { return {prompt, tokens, logits, margins}; }
};

/// Reads the run written to `dir`.
inline vision_reference_run read_vision_reference(const std::filesystem::path& dir) {
  vision_reference_run r;
  r.dir = dir;
  std::ifstream in(dir / "ref.json");
  r.json = nlohmann::json::parse(in);
  const nlohmann::json& j = r.json;
  r.prompt = j["prompt"].get<std::vector<int32_t>>();
  r.tokens = j["tokens"].get<std::vector<int32_t>>();
  r.logits = j["logits"].get<std::vector<std::vector<float>>>();
  r.margins = j["margins"].get<std::vector<double>>();
  for (const auto& range : j["image_token_ranges"]) r.image_ranges.emplace_back(range[0], range[1]);
  for (const auto& image : j["image_features"]) {
    std::vector<float> flat;
    for (const auto& row : image)
      for (double v : row) flat.push_back(static_cast<float>(v));
    r.features.push_back(std::move(flat));
  }
  for (size_t i = 0; i < r.image_ranges.size(); ++i)
    r.pixels.push_back(read_floats(dir / ("pixels" + std::to_string(i) + ".f32")));
  return r;
}

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
