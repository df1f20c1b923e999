// `actorllm bench throughput`: offline throughput of the engine without HTTP, through the
// actors and through the actor-free spine in the same run, so the actor layer's cost is a
// ratio measured on the same machine at the same moment.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "actors/engine/llm_engine.hpp"
#include "actors/engine_system.hpp"
#include "actors/worker_backend.hpp"
#include "app/command.hpp"
#include "bench/bench_util.hpp"
#include "config/engine_flags.hpp"

namespace actorllm::app {
namespace {

std::vector<generate_request> random_requests(int num_prompts, int input_len, int output_len,
                                              int32_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> token(3, vocab - 1);
  std::vector<generate_request> requests(num_prompts);
  for (int i = 0; i < num_prompts; ++i) {
    auto& r = requests[i];
    r.request_id = "bench-" + std::to_string(i);
    r.kind = prompt_kind::token_ids;
    r.token_ids.push_back(1);
    for (int j = 1; j < input_len; ++j) r.token_ids.push_back(token(rng));
    r.params.temperature = 0;
    r.params.max_tokens = output_len;
    r.params.ignore_eos = true;
  }
  return requests;
}

nlohmann::json summarize(const char* path, double seconds,
                         const std::vector<std::vector<request_output>>& outs, int input_len) {
  int64_t generated = 0, failed = 0;
  for (const auto& r : outs) {
    if (r.empty() || r[0].finish == finish_reason::error) ++failed;
    for (const auto& c : r) generated += static_cast<int64_t>(c.token_ids.size());
  }
  const double n = static_cast<double>(outs.size());
  return {{"path", path},
          {"seconds", seconds},
          {"requests_per_s", n / seconds},
          {"output_tok_s", generated / seconds},
          {"total_tok_s", (generated + n * input_len) / seconds},
          {"failed", failed}};
}

int run_throughput(int argc, char** argv) {
  engine_config config;
  config.model.model = "../shared/models/stories260K";
  int64_t num_prompts = 256, input_len = 32, output_len = 64, seed = 0;
  std::string path = "both";
  flag_parser p(
      "actorllm bench throughput [MODEL] [options]",
      "Offline throughput (requests/s, tokens/s) of random prompts with ignore_eos, through\n"
      "the actors, the actor-free spine, or both (then the actor layer's cost is reported).");
  add_engine_flags(p, config);
  p.add_number("--num-prompts", "requests", num_prompts);
  p.add_number("--input-len", "prompt tokens per request", input_len);
  p.add_number("--output-len", "generated tokens per request", output_len);
  p.add_number("--bench-seed", "seed of the random prompts", seed);
  p.add_string("--path", "actors, spine or both", path);
  if (auto error = p.parse(argc, argv)) {
    std::fprintf(stderr, "actorllm bench throughput: %s\n", error->c_str());
    return exit_usage;
  }
  if (p.help_requested()) {
    std::printf("%s", p.help().c_str());
    return 0;
  }
  if (path != "actors" && path != "spine" && path != "both") {
    std::fprintf(stderr, "actorllm bench throughput: --path: must be actors, spine or both\n");
    return exit_usage;
  }
  config.server.log_stats_interval = 0;
  nlohmann::json rows = nlohmann::json::array();
  int32_t vocab = 0;
  {
    // The spine first: it loads the model and tells the vocabulary size.
    llm_engine engine(engine_setup::load(config, select_backend(config)));
    vocab = static_cast<int32_t>(engine.setup().model->config().vocab_size);
    const auto requests = random_requests(num_prompts, input_len, output_len, vocab, seed);
    run_to_completion(engine, {requests.front()});  // warm-up
    if (path != "actors") {
      const double t0 = bench::now_seconds();
      const auto outs = run_to_completion(engine, requests);
      rows.push_back(summarize("spine", bench::now_seconds() - t0, outs, input_len));
    }
  }
  if (path != "spine") {
    engine_system engine(config);
    const auto requests = random_requests(num_prompts, input_len, output_len, vocab, seed);
    engine.client().generate({requests.front()});
    const double t0 = bench::now_seconds();
    const auto outs = engine.client().generate(requests);
    rows.push_back(summarize("actors", bench::now_seconds() - t0, outs, input_len));
  }
  if (rows.size() == 2)
    rows[1]["vs_spine"] =
        rows[1]["output_tok_s"].get<double>() / rows[0]["output_tok_s"].get<double>();
  for (auto& row : rows) {
    row["model"] = config.model.model;
    row["num_prompts"] = num_prompts;
    row["input_len"] = input_len;
    row["output_len"] = output_len;
  }
  bench::print_report(
      "offline throughput",
      {"path", "requests_per_s", "output_tok_s", "total_tok_s", "vs_spine", "failed"}, rows);
  return 0;
}

int run_bench(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "throughput") return run_throughput(argc - 1, argv + 1);
  std::fprintf(stderr,
               "usage: actorllm bench throughput [options]   (serving: build/bench/serve_bench)\n");
  return exit_usage;
}

const command_registration registration("bench", {"offline throughput benchmark (bench throughput)",
                                                  run_bench});

}  // namespace
}  // namespace actorllm::app
