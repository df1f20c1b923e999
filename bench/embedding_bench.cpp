// Embeddings per second through the actor-free engine (--task embed): `--inputs` prompts of
// `--prompt-len` varied token ids, all submitted at once, for LAST and MEAN pooling, against
// the same prompts run as 1-token generations in the same round (what a prefill costs).
//
//   build/bench/embedding_bench [--inputs 64] [--prompt-len 128] [--rounds 3] [--threads 0] MODEL
#include <cstdlib>
#include <stdexcept>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"
#include "bench/engine_runs.hpp"
#include "kernels/cpu/ops.hpp"

using namespace actorllm;

namespace {

engine_config config_for(const std::string& model, const std::string& task,
                         const std::string& pooling, int prompt_len, int threads) {
  engine_config c;
  c.model.model = model;
  c.model.task = task;
  c.model.pooling_type = pooling;
  c.model.max_model_len = (prompt_len + 32) / 16 * 16 + 16;
  c.cache.enable_prefix_caching = false;
  c.parallel.cpu_threads = threads;
  c.parallel.device = "cpu";
  c.server.log_stats_interval = 0;
  return c;
}

std::vector<generate_request> prompts(int count, int len, int64_t vocab, pooling_type pooling) {
  static int64_t serial = 0;
  std::vector<generate_request> rs;
  for (int i = 0; i < count; ++i) {
    generate_request r;
    r.request_id = "e" + std::to_string(serial++);
    r.kind = prompt_kind::token_ids;
    r.token_ids.push_back(1);
    for (int j = 1; j < len; ++j)
      r.token_ids.push_back(
          static_cast<int32_t>(3 + (i * 7919 + j * 104729 + serial) % (vocab - 3)));
    r.params.max_tokens = 1;
    r.params.temperature = 0;
    r.params.ignore_eos = true;
    r.params.pooling = pooling;
    rs.push_back(std::move(r));
  }
  return rs;
}

/// Seconds to run every request to its end.
double timed(llm_engine& engine, const std::vector<generate_request>& requests) {
  const double start = bench::now_seconds();
  for (const auto& r : requests)
    if (auto refused = engine.add_request(r)) throw std::runtime_error(refused->error);
  while (engine.has_work()) engine.step();
  return bench::now_seconds() - start;
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 64, prompt_len = 128, rounds = 3, threads = 0;
  std::string model;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 < argc && a == "--inputs")
      inputs = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--prompt-len")
      prompt_len = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--rounds")
      rounds = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--threads")
      threads = std::atoi(argv[++i]);
    else
      model = a;
  }
  if (model.empty()) {
    std::fprintf(stderr, "usage: embedding_bench [options] MODEL (see the file's header)\n");
    return 2;
  }
  llm_engine generate(
      engine_setup::load(config_for(model, "generate", "LAST", prompt_len, threads)));
  const int64_t vocab = generate.setup().model->config().vocab_size;
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string pooling : {"LAST", "MEAN"}) {
    llm_engine embed(engine_setup::load(config_for(model, "embed", pooling, prompt_len, threads)));
    const pooling_type type = pooling == "LAST" ? pooling_type::last : pooling_type::mean;
    std::vector<double> per_second, ratio;
    for (int round = 0; round < rounds; ++round) {
      const double prefill =
          timed(generate, prompts(inputs, prompt_len, vocab, pooling_type::none));
      const double seconds = timed(embed, prompts(inputs, prompt_len, vocab, type));
      per_second.push_back(inputs / seconds);
      ratio.push_back(prefill / seconds);
    }
    rows.push_back({{"pooling", pooling},
                    {"embeddings_per_s", bench::median(per_second)},
                    {"tokens_per_s", bench::median(per_second) * prompt_len},
                    {"vs_one_token_generation", bench::median(ratio)}});
  }
  bench::print_report(
      "embeddings on " + model + ": " + std::to_string(inputs) + " inputs of " +
          std::to_string(prompt_len) + " tokens at once, " + std::to_string(rounds) + " rounds, " +
          std::to_string(cpu::num_threads()) + " threads (CPU)",
      {"pooling", "embeddings_per_s", "tokens_per_s", "vs_one_token_generation"}, rows);
}
