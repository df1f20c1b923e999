// `actorllm bench throughput`: offline throughput of the engine without HTTP, through the
// actors and through the actor-free spine in the same run, so the actor layer's cost is a
// ratio measured on the same machine at the same moment.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "actors/offline_engine/llm_engine.hpp"
#include "actors/system/engine_system.hpp"
#include "actors/system/worker_backend.hpp"
#include "app/command.hpp"
#include "config/engine_flags.hpp"
#include "monitoring/report_table.hpp"

namespace actorllm::app {
namespace {

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

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

/// `worker_seconds`: the model runner's own time in the run; the rest of `seconds` is what
/// the path adds around the forward passes (scheduling, messages, detokenizing).
nlohmann::json summarize(const char* path, double seconds, double worker_seconds,
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
          {"outside_worker", 1.0 - worker_seconds / seconds},
          {"failed", failed}};
}

double worker_busy_seconds(engine_system& engine) {
  double total = 0;
  for (const auto& replica : engine.stats()) total += replica.worker_busy_seconds;
  return total;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// One row per path: its median run by output tok/s (the lower middle one of an even count),
/// a real run, with every run's rate in run order beside it.
nlohmann::json median_row(const nlohmann::json& runs, const std::string& path) {
  std::vector<nlohmann::json> mine;
  std::vector<double> rates;
  for (const auto& r : runs)
    if (r["path"] == path) mine.push_back(r), rates.push_back(r["output_tok_s"].get<double>());
  if (mine.empty()) return {};
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) {
    return a["output_tok_s"].template get<double>() < b["output_tok_s"].template get<double>();
  });
  nlohmann::json row = mine[(mine.size() - 1) / 2];
  row["runs_output_tok_s"] = rates;
  return row;
}

int run_throughput(int argc, char** argv) {
  engine_config config;
  config.model.model = "../shared/models/stories260K";
  int64_t num_prompts = 256, input_len = 32, output_len = 64, seed = 0, repeat = 1;
  std::string path = "both";
  flag_parser p(
      "actorllm bench throughput [MODEL] [options]",
      "Offline throughput (requests/s, tokens/s) of random prompts with ignore_eos, through\n"
      "the actors, the actor-free spine, or both (then the actor layer's cost is reported).\n"
      "With --repeat N the paths take turns N times and each reports its median run, so that\n"
      "a noisy machine shifts both alike.");
  add_engine_flags(p, config);
  p.add_number("--num-prompts", "requests", num_prompts);
  p.add_number("--input-len", "prompt tokens per request", input_len);
  p.add_number("--output-len", "generated tokens per request", output_len);
  p.add_number("--bench-seed", "seed of the random prompts", seed);
  p.add_number("--repeat", "runs per path, taken in turns; the median is reported", repeat);
  p.add_choice<std::string>("--path", "which engine to run (default both)", path,
                            {{"actors", "actors"}, {"spine", "spine"}, {"both", "both"}});
  if (auto stop = parse_flags(p, argc, argv, "actorllm bench throughput")) return *stop;
  if (repeat < 1) {
    std::fprintf(stderr, "actorllm bench throughput: --repeat: must be >= 1\n");
    return exit_usage;
  }
  config.server.log_stats_interval = 0;

  // Both engines stay loaded for the whole run, so that their turns alternate.
  std::unique_ptr<llm_engine> spine;
  std::unique_ptr<engine_system> actors;
  spine = std::make_unique<llm_engine>(engine_setup::load(config, select_backend(config)));
  const auto vocab = static_cast<int32_t>(spine->setup().model->config().vocab_size);
  const auto requests = random_requests(num_prompts, input_len, output_len, vocab, seed);
  if (path == "actors") spine.reset();
  if (spine) run_to_completion(*spine, {requests.front()});  // warm-up
  if (path != "spine") {
    actors = std::make_unique<engine_system>(config);
    actors->client().generate({requests.front()});
  }

  nlohmann::json runs = nlohmann::json::array();
  for (int64_t run = 0; run < repeat; ++run) {
    if (spine) {
      const double busy0 = spine->worker_busy_seconds(), t0 = now_seconds();
      const auto outs = run_to_completion(*spine, requests);
      runs.push_back(summarize("spine", now_seconds() - t0, spine->worker_busy_seconds() - busy0,
                               outs, input_len));
    }
    if (actors) {
      const double busy0 = worker_busy_seconds(*actors), t0 = now_seconds();
      const auto outs = actors->client().generate(requests);
      const double seconds = now_seconds() - t0;
      runs.push_back(
          summarize("actors", seconds, worker_busy_seconds(*actors) - busy0, outs, input_len));
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const char* name : {"spine", "actors"})
    if (auto row = median_row(runs, name); !row.is_null()) rows.push_back(row);
  if (rows.size() == 2) {
    rows[1]["vs_spine"] =
        rows[1]["output_tok_s"].get<double>() / rows[0]["output_tok_s"].get<double>();
    // The same, run by run: the two paths of one round ran back to back.
    std::vector<double> paired, extra_outside;
    for (size_t i = 0; i + 1 < runs.size(); i += 2) {
      paired.push_back(runs[i + 1]["output_tok_s"].get<double>() /
                       runs[i]["output_tok_s"].get<double>());
      extra_outside.push_back(runs[i + 1]["outside_worker"].get<double>() -
                              runs[i]["outside_worker"].get<double>());
    }
    rows[1]["vs_spine_paired"] = median(paired);
    // What the actor layer adds around the forward passes, as a share of the run's time. The
    // forward passes themselves are the same work on both paths, so this share is free of
    // the machine's noise in the math (which moves both paths' rates by +-10 % here).
    rows[1]["actor_cost"] = median(extra_outside);
  }
  for (auto& row : rows) {
    row["model"] = config.model.model;
    row["num_prompts"] = num_prompts;
    row["input_len"] = input_len;
    row["output_len"] = output_len;
    row["repeat"] = repeat;
  }
  print_report("offline throughput",
               {"path", "requests_per_s", "output_tok_s", "total_tok_s", "outside_worker",
                "vs_spine", "vs_spine_paired", "actor_cost", "failed"},
               rows);
  return 0;
}

int run_bench(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "throughput") return run_throughput(argc - 1, argv + 1);
  std::fprintf(stderr,
               "usage: actorllm bench throughput [options]   (serving: build/bench/serve_bench)\n");
  return exit_usage;
}

const command_registration bench_command("bench",
                                         {"offline throughput benchmark (bench throughput)",
                                          run_bench});

}  // namespace
}  // namespace actorllm::app
