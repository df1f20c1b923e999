// The KV cache's element type: decode tok/s of `--concurrency` greedy streams with long
// prompts (attention reads the whole context every step) on the actor-free engine, with a
// float32, float16 and float8 (E4M3) cache, each as a ratio to float32 measured right before
// it (the median over rounds), and the bytes a block of 16 tokens takes.
//
//   build/bench/kv_dtype_bench [--prompt-len 200] [--decode-tokens 48] [--concurrency 32]
//       [--rounds 3] [--threads 0] [--out FILE.json] MODEL
#include <fstream>
#include <stdexcept>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"
#include "bench/engine_runs.hpp"
#include "kernels/cpu/ops.hpp"

using namespace actorllm;

namespace {

struct options {
  int prompt_len = 200, decode_tokens = 48, concurrency = 32, rounds = 3, threads = 0;
  std::string model, out;
};

engine_config config_for(const options& o, const std::string& cache_dtype) {
  engine_config c;
  c.model.model = o.model;
  const int32_t block_size = 16;
  c.model.max_model_len = (o.prompt_len + o.decode_tokens) / block_size * block_size + block_size;
  c.cache.block_size = block_size;
  c.cache.cache_dtype = cache_dtype;
  c.cache.num_gpu_blocks_override =
      int64_t{o.concurrency} * (c.model.max_model_len / block_size) + 8;
  c.cache.num_cpu_blocks_override = 8;
  c.cache.enable_prefix_caching = false;  // every stream computes its own context
  c.scheduler.max_num_seqs = std::max(o.concurrency, 1);
  c.parallel.cpu_threads = o.threads;
  c.parallel.device = "cpu";
  c.server.log_stats_interval = 0;
  return c;
}

std::vector<generate_request> requests_for(const options& o, int64_t vocab) {
  return bench::varied_greedy_requests(o.concurrency, o.prompt_len, vocab, o.decode_tokens);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  bench::read_args(argc, argv,
                   {{"--prompt-len", bench::int_flag(o.prompt_len)},
                    {"--decode-tokens", bench::int_flag(o.decode_tokens)},
                    {"--concurrency", bench::int_flag(o.concurrency)},
                    {"--rounds", bench::int_flag(o.rounds)},
                    {"--threads", bench::int_flag(o.threads)},
                    {"--out", bench::string_flag(o.out)}},
                   o.model);
  if (o.model.empty()) {
    std::fprintf(stderr, "usage: kv_dtype_bench [options] MODEL (see the file's header)\n");
    return 2;
  }
  const double start = bench::now_seconds();
  const std::vector<std::string> dtypes{"float32", "float16", "fp8"};
  std::vector<std::unique_ptr<llm_engine>> engines;
  for (const auto& d : dtypes)
    engines.push_back(std::make_unique<llm_engine>(engine_setup::load(config_for(o, d))));
  const int64_t vocab = engines[0]->setup().model->config().vocab_size;

  std::vector<std::vector<double>> tok_s(dtypes.size()), ratio(dtypes.size());
  for (int round = 0; round < o.rounds; ++round)
    for (size_t d = 0; d < dtypes.size(); ++d) {
      const auto base = bench::run_requests(*engines[0], requests_for(o, vocab));
      const auto r = bench::run_requests(*engines[d], requests_for(o, vocab));
      tok_s[d].push_back(r.decode_tok_s);
      ratio[d].push_back(r.decode_tok_s / base.decode_tok_s);
    }

  nlohmann::json rows = nlohmann::json::array();
  for (size_t d = 0; d < dtypes.size(); ++d) {
    const auto shape =
        engines[d]->setup().model->cache_shape(1, 16, engines[d]->setup().runner.cache_dtype);
    rows.push_back({{"kv_cache_dtype", dtypes[d]},
                    {"bytes_per_block", shape.bytes_per_block()},
                    {"tok_s", bench::median(tok_s[d])},
                    {"vs_float32", bench::median(ratio[d])}});
  }
  const std::string title =
      "KV cache dtype on " + o.model + ": decode tok/s, " + std::to_string(o.concurrency) +
      " streams of " + std::to_string(o.prompt_len) + " prompt tokens, " +
      std::to_string(o.decode_tokens) + " decoded, " + std::to_string(o.rounds) + " rounds, " +
      std::to_string(cpu::num_threads()) + " threads (CPU)";
  bench::print_report(title, {"kv_cache_dtype", "bytes_per_block", "tok_s", "vs_float32"}, rows);
  std::printf("(%.0f s in all)\n", bench::now_seconds() - start);
  if (!o.out.empty()) {
    nlohmann::json doc{{"model", o.model},
                       {"prompt_len", o.prompt_len},
                       {"decode_tokens", o.decode_tokens},
                       {"concurrency", o.concurrency},
                       {"rounds", o.rounds},
                       {"threads", cpu::num_threads()},
                       {"rows", rows}};
    std::ofstream(o.out) << doc.dump(2) << "\n";
  }
}
