// Each supported architecture against an independent reference: a random-weight checkpoint
// with the family's own tensor names and config keys (scripts/make_random_model.py) is run by
// our CPU forward over the paged KV cache and by tests/reference/reference_forward.py, a
// float64 numpy forward written from the published modeling code. The reference's tokens are
// fed to ours (teacher forcing), so every step's logits are compared, also after a step whose
// top two logits are too close for greedy choices to agree: logits within 1e-4 of the largest
// one, and the same greedy token wherever the reference's margin exceeds our float32 error.
// Prompts are prefilled in chunks across small blocks, so windows start mid-block and whole
// blocks fall out of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "common/kv_ids.hpp"
#include "model/llama_model.hpp"
#include "tests/support/random_models.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

struct family_case {
  std::string name;  // the test's name
  std::string args;  // for make_random_model.py
  int steps = 40;    // generated after the prompt
  int32_t block_size = 8;
  int chunk = 5;  // prefill chunk
};

void PrintTo(const family_case& c, std::ostream* out) {
  *out << c.name;
}

fs::path source_dir() {
  return ACTORLLM_SOURCE_DIR;
}

void run(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

struct reference_run {
  std::vector<int32_t> prompt, tokens;
  std::vector<std::vector<float>> logits;
  std::vector<double> margins;
};

/// Makes the checkpoint and the reference's run of it in `dir`.
reference_run make_reference(const family_case& c, const fs::path& dir) {
  reference_run r;
  const std::string prompt = "1,5,9,13,17,21,25,29";
  run(testing::python() + " " + (source_dir() / "scripts/make_random_model.py").string() + " " +
      c.args + " --out " + (dir / "model").string() + " >/dev/null");
  run(testing::python() + " " + (source_dir() / "tests/reference/reference_forward.py").string() +
      " " + (dir / "model").string() + " --prompt " + prompt + " --steps " +
      std::to_string(c.steps) + " --out " + (dir / "reference.json").string());
  std::ifstream in(dir / "reference.json");
  const auto j = nlohmann::json::parse(in);
  r.prompt = j["prompt"].get<std::vector<int32_t>>();
  r.tokens = j["tokens"].get<std::vector<int32_t>>();
  r.logits = j["logits"].get<std::vector<std::vector<float>>>();
  r.margins = j["margins"].get<std::vector<double>>();
  return r;
}

/// Our logits at each step, with the reference's tokens fed back.
std::vector<std::vector<float>> forced_logits(const llama_model& model, const reference_run& ref,
                                              int32_t block_size, int chunk) {
  const int64_t vocab = model.config().vocab_size;
  const auto total = static_cast<int32_t>(ref.prompt.size() + ref.tokens.size());
  const int32_t num_blocks = (total + block_size - 1) / block_size;
  kv_cache cache(model.cache_shape(num_blocks, block_size));
  std::vector<int32_t> table(num_blocks);
  std::iota(table.rbegin(), table.rend(), 0);  // blocks out of order, as a real pool hands them
  std::vector<int32_t> tokens = ref.prompt;
  forward_batch batch;
  forward_workspace ws;
  std::vector<float> logits;
  std::vector<std::vector<float>> out;
  int32_t computed = 0;
  while (out.size() < ref.tokens.size()) {
    const int32_t remaining = static_cast<int32_t>(tokens.size()) - computed;
    const int32_t take = std::min(remaining, chunk);
    const bool sample = take == remaining;
    batch.clear();
    batch.add_sequence(std::span(tokens).subspan(computed, take), computed, table, block_size,
                       sample);
    batch.finalize();
    model.forward(batch, cache, ws, logits);
    computed += take;
    // Blocks wholly behind every layer's window are released by the block manager; mark them
    // so, to show that attention never reads them.
    if (const int32_t window = model.config().max_sliding_window(); window > 0)
      for (int32_t b = 0; (b + 1) * block_size <= computed - window; ++b) table[b] = no_block;
    if (!sample) continue;
    out.emplace_back(logits.begin(), logits.begin() + vocab);
    tokens.push_back(ref.tokens[out.size() - 1]);
  }
  return out;
}

class model_families : public ::testing::TestWithParam<family_case> {};

TEST_P(model_families, logits_and_greedy_tokens_match_the_reference) {
  const family_case& c = GetParam();
  const fs::path dir =
      fs::temp_directory_path() / ("actorllm-family-" + c.name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const reference_run ref = make_reference(c, dir);
  ASSERT_EQ(ref.tokens.size(), static_cast<size_t>(c.steps));
  const llama_model model(dir / "model");
  const auto ours = forced_logits(model, ref, c.block_size, c.chunk);
  int agreeing = 0, decisive = 0;
  for (size_t step = 0; step < ours.size(); ++step) {
    const auto& want = ref.logits[step];
    const auto& got = ours[step];
    ASSERT_EQ(got.size(), want.size());
    float largest = 1.0f, worst = 0.0f;
    for (size_t i = 0; i < want.size(); ++i) {
      largest = std::max(largest, std::abs(want[i]));
      worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    EXPECT_LE(worst, 1e-4f * largest) << c.name << " step " << step;
    if (ref.margins[step] > 1e-3) {
      ++decisive;
      const auto top = std::max_element(got.begin(), got.end()) - got.begin();
      agreeing += top == ref.tokens[step];
    }
  }
  EXPECT_EQ(agreeing, decisive) << c.name << ": greedy tokens where the margin is clear";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    architectures, model_families,
    ::testing::Values(
        family_case{"llama3_tied", "--arch llama-tied"},
        family_case{"llama_linear_rope", "--arch llama-tied --rope-scaling linear"},
        family_case{"llama_yarn_rope", "--arch llama-tied --rope-scaling yarn"},
        family_case{"mistral_window", "--arch mistral"},
        family_case{"mistral_window_portable_kernel", "--arch mistral --sliding-window 11", 40, 4,
                    3},
        family_case{"qwen2", "--arch qwen2"},
        family_case{"qwen2_window",
                    "--arch qwen2 --use-sliding-window --sliding-window 12 "
                    "--max-window-layers 1"},
        family_case{"qwen3", "--arch qwen3"}, family_case{"phi3", "--arch phi3"},
        // LongRoPE within the original context (32 here): past it a KV cache keeps the keys
        // rotated by the short factors, as vLLM does, while the reference re-rotates them.
        family_case{"phi3_longrope", "--arch phi3 --rope-scaling longrope", 24},
        family_case{"gemma", "--arch gemma"}, family_case{"gemma2", "--arch gemma2"},
        family_case{"gemma3", "--arch gemma3"}, family_case{"mixtral", "--arch mixtral"},
        family_case{"qwen2_moe", "--arch qwen2_moe"}, family_case{"qwen3_moe", "--arch qwen3_moe"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace actorllm
