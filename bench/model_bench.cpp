// Single-stream decode and prefill speed of the CPU forward, with the memory-bandwidth bound
// (weight bytes per token against a copy bandwidth measured in the same run) beside each.
//
//   build/bench/model_bench [--prompt-len 128] [--decode-tokens 64] [--threads 0] MODEL...
#include <cstdlib>
#include <numeric>

#include "bench/bench_util.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/llama_model.hpp"

using namespace actorllm;

namespace {

/// Prefill: best of 3. Decode: 3 runs of decode_tokens from the same position, each right
/// after a copy-bandwidth measurement, so that the bound and the rate come from the same
/// moment (this class of VM moves its memory bandwidth by 20 % within minutes); the run with
/// the median decode / bound is reported.
nlohmann::json bench_model(const std::string& path, int prompt_len, int decode_tokens) {
  llama_model model(path);
  const auto& c = model.config();
  prompt_len = std::min<int>(prompt_len, c.max_position_embeddings - decode_tokens - 1);
  const int32_t block_size = 16;
  const int32_t num_blocks = (prompt_len + decode_tokens + block_size) / block_size + 1;
  kv_cache cache(model.cache_shape(num_blocks, block_size));
  std::vector<int32_t> table(num_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::vector<int32_t> prompt(prompt_len);
  for (int i = 0; i < prompt_len; ++i) prompt[i] = 1 + (i * 7919) % (c.vocab_size - 1);

  forward_batch batch;
  std::vector<float> logits;
  forward_workspace ws;
  auto prefill = [&] {
    batch.clear();
    batch.add_sequence(prompt, 0, table, block_size, true);
    batch.finalize();
    model.forward(batch, cache, ws, logits);
  };
  prefill();  // warm-up: workspace, page faults
  double best_prefill = 1e30;
  for (int r = 0; r < 3; ++r) {
    const double t0 = bench::now_seconds();
    prefill();
    best_prefill = std::min(best_prefill, bench::now_seconds() - t0);
  }
  auto decode = [&] {
    int32_t token = 1;
    const double t0 = bench::now_seconds();
    for (int i = 0; i < decode_tokens; ++i) {
      batch.clear();
      const int32_t one[] = {token};
      batch.add_sequence(one, prompt_len + i, table, block_size, true);
      batch.finalize();
      model.forward(batch, cache, ws, logits);
      token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    return bench::now_seconds() - t0;
  };
  const double weight_bytes = static_cast<double>(model.bytes_read_per_token());
  struct decode_run {
    double vs_bound, tps, bound_tps, bandwidth;
  };
  std::vector<decode_run> runs;
  for (int r = 0; r < 3; ++r) {
    const double bandwidth = bench::measure_copy_bandwidth();
    const double tps = decode_tokens / decode();
    runs.push_back({tps / (bandwidth / weight_bytes), tps, bandwidth / weight_bytes, bandwidth});
  }
  std::sort(runs.begin(), runs.end(),
            [](const decode_run& a, const decode_run& b) { return a.vs_bound < b.vs_bound; });
  const decode_run& median = runs[1];
  const double decode_tps = median.tps, bound_tps = median.bound_tps,
               copy_bandwidth = median.bandwidth;
  return {{"model", std::filesystem::path(path).filename().string()},
          {"params_M", c.num_parameters() / 1e6},
          {"weight_MB", weight_bytes / 1e6},
          {"prefill_tok_s", prompt_len / best_prefill},
          {"decode_tok_s", decode_tps},
          {"bandwidth_bound_tok_s", bound_tps},
          {"decode_vs_bound", decode_tps / bound_tps},
          {"copy_GB_s", copy_bandwidth / 1e9},
          {"prompt_len", prompt_len},
          {"decode_tokens", decode_tokens}};
}

}  // namespace

int main(int argc, char** argv) {
  int prompt_len = 128, decode_tokens = 64, threads = 0;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--prompt-len" && i + 1 < argc)
      prompt_len = std::atoi(argv[++i]);
    else if (arg == "--decode-tokens" && i + 1 < argc)
      decode_tokens = std::atoi(argv[++i]);
    else if (arg == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else
      models.push_back(arg);
  }
  if (models.empty()) {
    std::fprintf(
        stderr, "usage: model_bench [--prompt-len N] [--decode-tokens N] [--threads N] MODEL...\n");
    return 2;
  }
  cpu::set_num_threads(threads);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : models) {
    auto row = bench_model(m, prompt_len, decode_tokens);
    row["threads"] = cpu::num_threads();
    rows.push_back(row);
  }
  bench::print_report("single-stream speed (CPU, float32)",
                      {"model", "params_M", "prefill_tok_s", "decode_tok_s",
                       "bandwidth_bound_tok_s", "decode_vs_bound", "copy_GB_s"},
                      rows);
}
