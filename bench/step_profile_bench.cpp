// Where a decode step (or, with --prefill, the prefill) goes on the CPU backend (issue 43), at
// each concurrency asked for: the
// forward op by op (profiled_ops: the q/k/v projection with rotary and the cache write,
// attention, the output projection, the MLP, the norms, the LM head), the worker's time
// outside the ops (batching, sampling, logprobs), and the engine's outside the worker
// (scheduling, output processing and detokenizing). The served-only costs (actor messages,
// HTTP and JSON) are bench/served_cpu.sh's, per thread.
//
//   build/bench/step_profile_bench [--concurrency 1,32] [--prompt-len 32] [--decode-tokens 64]
//       [--threads 0] [--dtype auto] [--quantization none] [--kv-cache-dtype auto]
//       [--prefill 0|1] [--cpu-bind none|cores] [--out FILE.json] MODEL
//
// Each concurrency: every stream is prefilled, then the profile starts and `decode_tokens`
// steps run; times are per step, and as shares of the steps' wall time. With --prefill 1 the
// profile is of the prefill instead: the steps up to every stream's first token (one step
// while the prompts fit --max-num-batched-tokens, 8192 here).
#include <fstream>
#include <set>
#include <sstream>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"
#include "bench/engine_runs.hpp"
#include "kernels/cpu/ops.hpp"

using namespace actorllm;

namespace {

struct options {
  std::string concurrency = "1,32";
  int prompt_len = 32, decode_tokens = 64, threads = 0, prefill = 0;
  std::string dtype = "auto", quantization = "none", kv_cache_dtype = "auto", cpu_bind = "none";
  std::string model, out;
};

std::vector<int> numbers_in(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

engine_config config_for(const options& o, int streams) {
  engine_config c;
  c.model.model = o.model;
  c.model.dtype = o.dtype;
  c.model.quantization = o.quantization;
  const int32_t block_size = 16;
  c.model.max_model_len = (o.prompt_len + o.decode_tokens) / block_size * block_size + block_size;
  c.cache.block_size = block_size;
  c.cache.cache_dtype = o.kv_cache_dtype;
  c.cache.num_gpu_blocks_override = int64_t{streams} * (c.model.max_model_len / block_size) + 8;
  c.cache.num_cpu_blocks_override = 0;
  c.cache.enable_prefix_caching = false;  // every stream computes its own context
  c.scheduler.max_num_seqs = streams;
  c.scheduler.max_num_batched_tokens = std::max(8192, streams * o.prompt_len);
  c.parallel.cpu_threads = o.threads;
  c.parallel.cpu_bind = o.cpu_bind;
  c.parallel.device = "cpu";
  c.server.log_stats_interval = 0;
  return c;
}

/// One concurrency's profile: the rows of the table and its JSON.
nlohmann::json profile_at(const options& o, int streams, nlohmann::json& rows) {
  engine_setup setup = engine_setup::load(config_for(o, streams));
  auto profile = std::make_shared<op_profile>();
  setup.runner.profile = profile;
  const int64_t vocab = setup.model->config().vocab_size;
  llm_engine engine(std::move(setup));
  for (const auto& r :
       bench::varied_greedy_requests(streams, o.prompt_len, vocab, o.decode_tokens + 1))
    if (auto refused = engine.add_request(r)) throw std::runtime_error(refused->error);
  // The prefills (up to each stream's first token) first, unless they are what is profiled.
  std::set<std::string> started;  // requests with their first token
  const auto prefill_step = [&] {
    for (const auto& out : engine.step())
      if (out.num_generated_tokens > 0) started.insert(out.request_id);
  };
  const auto prefilling = [&] { return static_cast<int>(started.size()) < streams; };
  if (!o.prefill)
    while (prefilling()) prefill_step();
  profile->reset();
  const double worker_before = engine.worker_busy_seconds();
  const double start = bench::now_seconds();
  int64_t steps = 0;
  if (o.prefill)
    for (; prefilling(); ++steps) prefill_step();
  else
    for (; steps < o.decode_tokens && engine.has_work(); ++steps) engine.step();
  const double wall = bench::now_seconds() - start;
  const double worker = engine.worker_busy_seconds() - worker_before;
  const op_profile::snapshot_t p = profile->snapshot();

  nlohmann::json phases = nlohmann::json::object();
  double in_ops = 0;
  const auto add_row = [&](const std::string& name, double seconds) {
    rows.push_back({{"streams", streams},
                    {"phase", name},
                    {"ms_per_step", 1000 * seconds / double(steps)},
                    {"share", seconds / wall}});
    phases[name] = seconds / double(steps);
  };
  for (std::size_t i = 0; i < num_op_phases; ++i) {
    if (p.calls[i] == 0) continue;
    const double seconds = double(p.nanoseconds[i]) * 1e-9;
    in_ops += seconds;
    add_row(std::string(to_string(static_cast<op_phase>(i))), seconds);
  }
  add_row("worker_outside_ops", std::max(0.0, worker - in_ops));
  add_row("engine_outside_worker", std::max(0.0, wall - worker));
  rows.push_back({{"streams", streams},
                  {"phase", "step"},
                  {"ms_per_step", 1000 * wall / double(steps)},
                  {"share", 1.0}});
  return {{"streams", streams},
          {"steps", steps},
          {"tok_s", double(steps) * streams / wall},
          {"seconds_per_step", phases},
          {"step_seconds", wall / double(steps)}};
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  bench::read_args(argc, argv,
                   {{"--concurrency", bench::string_flag(o.concurrency)},
                    {"--prompt-len", bench::int_flag(o.prompt_len)},
                    {"--decode-tokens", bench::int_flag(o.decode_tokens)},
                    {"--threads", bench::int_flag(o.threads)},
                    {"--cpu-bind", bench::string_flag(o.cpu_bind)},
                    {"--dtype", bench::string_flag(o.dtype)},
                    {"--quantization", bench::string_flag(o.quantization)},
                    {"--prefill", bench::int_flag(o.prefill)},
                    {"--kv-cache-dtype", bench::string_flag(o.kv_cache_dtype)},
                    {"--out", bench::string_flag(o.out)}},
                   o.model);
  if (o.model.empty()) {
    std::fprintf(stderr, "usage: step_profile_bench [options] MODEL (see the file's header)\n");
    return 2;
  }
  nlohmann::json rows = nlohmann::json::array(), runs = nlohmann::json::array();
  for (int streams : numbers_in(o.concurrency)) runs.push_back(profile_at(o, streams, rows));
  bench::print_report(std::string(o.prefill ? "Prefill" : "Decode step") + " profile of " +
                          o.model + " (" + o.dtype + ", quantization " + o.quantization +
                          ", KV cache " + o.kv_cache_dtype + "), " + std::to_string(o.prompt_len) +
                          "-token prompts, " + std::to_string(cpu::num_threads()) +
                          " threads (CPU)",
                      {"streams", "phase", "ms_per_step", "share"}, rows);
  if (!o.out.empty())
    std::ofstream(o.out) << nlohmann::json{{"model", o.model}, {"runs", runs}}.dump(2) << "\n";
  return 0;
}
