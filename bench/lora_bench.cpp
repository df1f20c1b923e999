// Multi-LoRA's cost: decode tok/s of `--concurrency` greedy streams on the actor-free engine
// with 0, 1 and 8 distinct adapters in the batch, each as a ratio to the same streams on an
// engine without LoRA measured right before it (the median over rounds).
//
//   build/bench/lora_bench [--rank 16] [--decode-tokens 64] [--concurrency 32] [--rounds 3]
//       [--threads 0] [--out FILE.json] MODEL
//
// The adapters are random PEFT adapters of rank --rank on all seven projections, written by
// scripts/make_random_lora.py (Debian's python3 with numpy) into a temporary folder. Rows:
//   0 adapters  LoRA on, every request on the base model (the bookkeeping alone);
//   1 adapter   every request on one adapter;
//   8 adapters  the requests spread over eight adapters (max_loras 8), four streams each.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"
#include "bench/engine_runs.hpp"
#include "kernels/cpu/ops.hpp"

using namespace actorllm;

namespace {

struct options {
  int rank = 16, decode_tokens = 64, concurrency = 32, rounds = 3, threads = 0;
  std::string model, out;
};

constexpr int max_adapters = 8;

engine_config config_for(const options& o, const std::vector<lora_module>& adapters) {
  engine_config c;
  c.model.model = o.model;
  const int32_t block_size = 16;
  c.model.max_model_len = 16 + o.decode_tokens + 2 * block_size;
  c.cache.block_size = block_size;
  c.cache.num_gpu_blocks_override =
      int64_t{o.concurrency} * (c.model.max_model_len / block_size + 1) + 8;
  c.cache.num_cpu_blocks_override = 8;
  c.scheduler.max_num_seqs = std::max(o.concurrency, 1);
  c.parallel.cpu_threads = o.threads;
  c.parallel.device = "cpu";
  c.server.log_stats_interval = 0;
  if (!adapters.empty()) {
    c.lora.enable_lora = true;
    c.lora.modules = adapters;
    c.lora.max_loras = max_adapters;
    c.lora.max_lora_rank = o.rank;
  }
  return c;
}

/// The bench's greedy requests; request i names adapter i % num_adapters (none when 0).
std::vector<generate_request> requests_for(const options& o, int num_adapters, int64_t vocab) {
  auto rs = bench::varied_greedy_requests(o.concurrency, 16, vocab, o.decode_tokens);
  if (num_adapters > 0)
    for (size_t i = 0; i < rs.size(); ++i)
      rs[i].model = "adapter" + std::to_string(i % num_adapters);
  return rs;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  bench::read_args(argc, argv,
                   {{"--rank", bench::int_flag(o.rank)},
                    {"--decode-tokens", bench::int_flag(o.decode_tokens)},
                    {"--concurrency", bench::int_flag(o.concurrency)},
                    {"--rounds", bench::int_flag(o.rounds)},
                    {"--threads", bench::int_flag(o.threads)},
                    {"--out", bench::string_flag(o.out)}},
                   o.model);
  if (o.model.empty()) {
    std::fprintf(stderr, "usage: lora_bench [options] MODEL (see the file's header)\n");
    return 2;
  }
  const double start = bench::now_seconds();
  const auto dir =
      std::filesystem::temp_directory_path() / ("actorllm-lora-bench-" + std::to_string(getpid()));
  std::vector<lora_module> adapters;
  for (int k = 0; k < max_adapters; ++k) {
    const auto path = dir / std::to_string(k);
    const std::string command = "/usr/bin/python3 " + std::string(ACTORLLM_SOURCE_DIR) +
                                "/scripts/make_random_lora.py --base " + o.model + " --rank " +
                                std::to_string(o.rank) + " --seed " + std::to_string(k) +
                                " --out " + path.string();
    if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
    adapters.push_back({"adapter" + std::to_string(k), path.string()});
  }

  llm_engine plain(engine_setup::load(config_for(o, {})));
  llm_engine lora(engine_setup::load(config_for(o, adapters)));
  std::filesystem::remove_all(dir);  // loaded: the folder is no longer needed
  const int64_t vocab = plain.setup().model->config().vocab_size;

  const int cases[] = {0, 1, max_adapters};
  std::vector<std::vector<double>> tok_s(3), ratio(3);
  for (int round = 0; round < o.rounds; ++round) {
    for (int c = 0; c < 3; ++c) {
      const auto base = bench::run_requests(plain, requests_for(o, 0, vocab));
      const auto r = bench::run_requests(lora, requests_for(o, cases[c], vocab));
      tok_s[c].push_back(r.decode_tok_s);
      ratio[c].push_back(r.decode_tok_s / base.decode_tok_s);
    }
  }

  nlohmann::json rows = nlohmann::json::array();
  for (int c = 0; c < 3; ++c)
    rows.push_back({{"adapters", cases[c]},
                    {"streams", o.concurrency},
                    {"tok_s", bench::median(tok_s[c])},
                    {"vs_no_lora", bench::median(ratio[c])}});
  const std::string title = "multi-LoRA on " + o.model + ": decode tok/s, rank " +
                            std::to_string(o.rank) + " on 7 projections, " +
                            std::to_string(o.decode_tokens) + " tokens, " +
                            std::to_string(o.rounds) + " rounds, " +
                            std::to_string(cpu::num_threads()) + " threads (CPU)";
  bench::print_report(title, {"adapters", "streams", "tok_s", "vs_no_lora"}, rows);
  std::printf("(%.0f s in all)\n", bench::now_seconds() - start);
  if (!o.out.empty()) {
    nlohmann::json doc{{"model", o.model},
                       {"rank", o.rank},
                       {"decode_tokens", o.decode_tokens},
                       {"rounds", o.rounds},
                       {"threads", cpu::num_threads()},
                       {"rows", rows}};
    std::ofstream(o.out) << doc.dump(2) << "\n";
  }
}
