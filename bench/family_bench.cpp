// Decode speed of each model family through the actor-free engine (scheduler, model runner,
// sampler, detokenizer), at concurrency 1 and 32, against a Llama of the same size measured
// in the same run; for mixtures of experts also the experts' share of a decode step.
//
//   build/bench/family_bench [--prompt-len 16] [--decode-tokens 64] [--concurrency 32]
//       [--rounds 2] [--baseline MODEL] [--threads 0] [--out FILE.json] MODEL...
//
// The baseline (the first MODEL, or --baseline) stays loaded for the whole run, and every
// round of every other model runs right after the baseline's run of the same concurrency
// (baseline c=1, model c=1, baseline c=32, model c=32): each ratio is the median of these
// pairs, so that the machine's drift over minutes moves both sides of a ratio alike.
//
// Decode tok/s counts only the tokens generated after every request has its first token (the
// step that ends the prefills is excluded), over the time they took; greedy, ignore_eos.
//
// Expert share (MoE only) is an estimate from timing the parts separately: moe_forward for n
// rows (random unit-variance inputs, so routing spreads as on random hidden states) on every
// sparse layer's weights in turn, i.e. one sparse layer's time times the number of sparse
// layers, divided by one whole llama_model::forward of n decode rows at the same context
// length (the middle of the generation).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"
#include "bench/engine_runs.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/moe_layer.hpp"

using namespace actorllm;

namespace {

struct options {
  int prompt_len = 16, decode_tokens = 64, concurrency = 32, rounds = 2, threads = 0;
  std::string baseline, out;
};

using bench::median;

std::string model_name(const std::string& path) {
  return std::filesystem::path(path).lexically_normal().filename().string().empty()
             ? std::filesystem::path(path).lexically_normal().parent_path().filename().string()
             : std::filesystem::path(path).lexically_normal().filename().string();
}

engine_config config_for(const std::string& path, const options& o) {
  engine_config c;
  c.model.model = path;
  const int32_t block_size = 16;
  const int32_t tokens = o.prompt_len + o.decode_tokens + 1;
  c.model.max_model_len = (tokens + block_size - 1) / block_size * block_size + block_size;
  c.cache.block_size = block_size;
  // Every request's blocks at once, and some spare: no preemption in the measured runs.
  c.cache.num_gpu_blocks_override =
      static_cast<int64_t>(o.concurrency) * (c.model.max_model_len / block_size) + 8;
  c.cache.num_cpu_blocks_override = 8;
  c.cache.enable_prefix_caching = false;
  c.parallel.cpu_threads = o.threads;
  c.parallel.device = "cpu";
  c.server.log_stats_interval = 0;
  return c;
}

/// Distinct greedy prompts (BOS + prompt_len - 1 ids), ignore_eos, decode_tokens each.
std::vector<generate_request> make_requests(int count, int prompt_len, int max_tokens,
                                            int64_t vocab, int round) {
  std::vector<generate_request> rs;
  for (int i = 0; i < count; ++i) {
    generate_request r;
    static int64_t serial = 0;  // ids unique over the whole run
    r.request_id = std::to_string(round) + "-" + std::to_string(i) + "-" + std::to_string(serial++);
    r.kind = prompt_kind::token_ids;
    r.token_ids.push_back(1);
    for (int j = 1; j < prompt_len; ++j)
      r.token_ids.push_back(
          static_cast<int32_t>(3 + (i * 7919 + j * 104729 + round * 31) % (vocab - 3)));
    r.params.temperature = 0;
    r.params.max_tokens = max_tokens;
    r.params.ignore_eos = true;
    rs.push_back(std::move(r));
  }
  return rs;
}

/// `count` requests at once until all end.
bench::run_result run_batch(llm_engine& engine, int count, int prompt_len, int max_tokens,
                            int round) {
  const int64_t vocab = engine.setup().model->config().vocab_size;
  return bench::run_requests(engine, make_requests(count, prompt_len, max_tokens, vocab, round));
}

/// Parameters a token reads: all, less the experts it is not routed to.
int64_t active_parameters(const model_config_hf& c, int64_t sparse_layers) {
  const int64_t idle = c.moe.num_experts - c.moe.top_k;
  return c.num_parameters() -
         sparse_layers * idle * 3 * c.hidden_size * c.moe.expert_intermediate_size;
}

struct moe_timing {
  double moe_ms = 0, forward_ms = 0, share = 0;
};

/// Median milliseconds of moe_forward over every sparse layer in turn (each on its own
/// experts; moe_ms is their sum) and of a whole forward of n decode rows at context `context`,
/// timed in turns; share: the median of moe / forward over the turns. Timing one layer again
/// and again would read the same top-k experts each time (two of 768 x 1024 are 19 MB), which
/// then stay in a 32 MB L3 cache, where a decode step reads each layer's experts once, from
/// memory.
moe_timing time_experts(const llama_model& model, const std::vector<int64_t>& sparse_layers, int n,
                        int context, int repeats) {
  const auto& c = model.config();
  const int64_t dim = c.hidden_size;
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal;
  // Unit-variance rows, as after the norm before the MLP; a fresh set per repeat, so that
  // the routing differs from one repeat to the next as it does from step to step.
  std::vector<std::vector<float>> xs(repeats + 1, std::vector<float>(n * dim));
  for (auto& x : xs)
    for (auto& v : x) v = normal(rng);
  std::vector<float> y(n * dim);
  moe_workspace mws;
  auto all_layers = [&](const std::vector<float>& x) {
    for (int64_t l : sparse_layers)
      moe_forward(x.data(), n, model.weights().layers[l].moe, c, mws, y.data());
  };
  all_layers(xs[repeats]);  // warm-up: the workspace at its size

  const int32_t block_size = 16;
  const int32_t blocks_per_seq = (context + block_size) / block_size;
  kv_cache cache(model.cache_shape(static_cast<int64_t>(n) * blocks_per_seq, block_size));
  forward_batch batch;
  for (int s = 0; s < n; ++s) {
    std::vector<int32_t> table(blocks_per_seq);
    std::iota(table.begin(), table.end(), s * blocks_per_seq);
    const int32_t token[] = {static_cast<int32_t>(3 + s)};
    batch.add_sequence(token, context - 1, table, block_size, true);
  }
  batch.finalize();
  forward_workspace ws;
  std::vector<float> logits;
  model.forward(batch, cache, ws, logits);  // warm-up

  // The two in turns, so that the machine's drift moves both sides of each ratio alike.
  std::vector<double> moe_times, forward_times, shares;
  for (int r = 0; r < repeats; ++r) {
    double t0 = bench::now_seconds();
    all_layers(xs[r]);
    moe_times.push_back(bench::now_seconds() - t0);
    t0 = bench::now_seconds();
    model.forward(batch, cache, ws, logits);
    forward_times.push_back(bench::now_seconds() - t0);
    shares.push_back(moe_times.back() / forward_times.back());
  }
  moe_timing t;
  t.moe_ms = 1e3 * median(moe_times);
  t.forward_ms = 1e3 * median(forward_times);
  t.share = median(shares);
  return t;
}

struct loaded {
  std::string path, name;
  std::unique_ptr<llm_engine> engine;
  std::vector<double> c1, c32, c1_e2e, c32_e2e;
};

void load(loaded& m, const options& o) {
  const double t0 = bench::now_seconds();
  m.engine = std::make_unique<llm_engine>(engine_setup::load(config_for(m.path, o)));
  // Warm-up: workspaces for one and for `concurrency` rows, the pool's pages touched.
  run_batch(*m.engine, 1, o.prompt_len, 4, -1);
  run_batch(*m.engine, o.concurrency, o.prompt_len, 4, -2);
  std::fprintf(stderr, "family_bench: %s loaded and warmed in %.1f s (%s)\n", m.name.c_str(),
               bench::now_seconds() - t0,
               m.engine->setup().model->config().describe_attention().c_str());
}

void measure(loaded& m, int concurrency, const options& o, int round) {
  const auto r = run_batch(*m.engine, concurrency, o.prompt_len, o.decode_tokens, round);
  (concurrency == 1 ? m.c1 : m.c32).push_back(r.decode_tok_s);
  (concurrency == 1 ? m.c1_e2e : m.c32_e2e).push_back(r.e2e_tok_s);
}

nlohmann::json describe(const loaded& m, const options& o) {
  const auto& model = *m.engine->setup().model;
  const auto& c = model.config();
  std::vector<int64_t> sparse;
  for (int64_t l = 0; l < c.num_layers; ++l)
    if (model.weights().layers[l].sparse()) sparse.push_back(l);
  const auto sparse_layers = static_cast<int64_t>(sparse.size());
  nlohmann::json row{{"model", m.name},
                     {"architecture", c.architecture},
                     {"params_M", c.num_parameters() / 1e6},
                     {"active_params_M", nullptr},
                     {"layers", c.num_layers},
                     {"attention", c.describe_attention()},
                     {"c1_tok_s", median(m.c1)},
                     {"c32_tok_s", median(m.c32)},
                     {"c1_e2e_tok_s", median(m.c1_e2e)},
                     {"c32_e2e_tok_s", median(m.c32_e2e)},
                     {"c1_runs", m.c1},
                     {"c32_runs", m.c32}};
  if (sparse_layers > 0) {
    row["active_params_M"] = active_parameters(c, sparse_layers) / 1e6;
    row["experts"] = c.moe.num_experts;
    row["top_k"] = c.moe.top_k;
    row["expert_width"] = c.moe.expert_intermediate_size;
    row["shared_expert_width"] = c.moe.shared_expert_intermediate_size;
    row["sparse_layers"] = sparse_layers;
    const int context = o.prompt_len + o.decode_tokens / 2;
    for (int n : {1, o.concurrency}) {
      const auto t = time_experts(model, sparse, n, context, n == 1 ? 9 : 5);
      const std::string k = "n" + std::to_string(n == 1 ? 1 : 32);
      row["expert_share_" + k] = t.share;
      row["moe_ms_" + k] = t.moe_ms;  // all sparse layers
      row["moe_layer_ms_" + k] = t.moe_ms / sparse_layers;
      row["forward_ms_" + k] = t.forward_ms;
      // The engine's own step in the measured runs, for comparison with forward_ms.
      const double tok_s = row[n == 1 ? "c1_tok_s" : "c32_tok_s"].get<double>();
      row["engine_step_ms_" + k] = tok_s > 0 ? 1e3 * n / tok_s : 0.0;
    }
  }
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--prompt-len")
      o.prompt_len = std::atoi(value().c_str());
    else if (arg == "--decode-tokens")
      o.decode_tokens = std::atoi(value().c_str());
    else if (arg == "--concurrency")
      o.concurrency = std::atoi(value().c_str());
    else if (arg == "--rounds")
      o.rounds = std::atoi(value().c_str());
    else if (arg == "--threads")
      o.threads = std::atoi(value().c_str());
    else if (arg == "--baseline")
      o.baseline = value();
    else if (arg == "--out")
      o.out = value();
    else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "family_bench: unknown option %s\n", arg.c_str());
      return 2;
    } else
      paths.push_back(arg);
  }
  if (paths.empty() || o.prompt_len < 1 || o.decode_tokens < 2 || o.concurrency < 1 ||
      o.rounds < 1) {
    std::fprintf(stderr,
                 "usage: family_bench [--prompt-len 16] [--decode-tokens 64] [--concurrency 32] "
                 "[--rounds 2] [--baseline MODEL] [--threads 0] [--out FILE.json] MODEL...\n");
    return 2;
  }
  // The baseline: --baseline (a path or a folder name among MODEL), else the first MODEL.
  size_t base = 0;
  if (!o.baseline.empty()) {
    auto it = std::find_if(paths.begin(), paths.end(), [&](const std::string& p) {
      return p == o.baseline || model_name(p) == o.baseline;
    });
    if (it == paths.end()) paths.insert(paths.begin(), o.baseline), it = paths.begin();
    base = static_cast<size_t>(it - paths.begin());
  }

  const double start = bench::now_seconds();
  loaded baseline;
  baseline.path = paths[base];
  baseline.name = model_name(paths[base]);
  load(baseline, o);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::vector<double>> ratio1, ratio32;  // per other model, per round
  std::vector<nlohmann::json> others;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i == base) continue;
    loaded m;
    m.path = paths[i];
    m.name = model_name(paths[i]);
    load(m, o);
    std::vector<double> r1, r32;
    for (int round = 0; round < o.rounds; ++round) {
      measure(baseline, 1, o, round);
      measure(m, 1, o, round);
      r1.push_back(m.c1.back() / baseline.c1.back());
      measure(baseline, o.concurrency, o, round);
      measure(m, o.concurrency, o, round);
      r32.push_back(m.c32.back() / baseline.c32.back());
    }
    auto row = describe(m, o);
    row["c1_vs_baseline"] = median(r1);
    row["c32_vs_baseline"] = median(r32);
    others.push_back(row);
    std::fprintf(stderr, "family_bench: %s c=1 %.1f tok/s (x%.2f), c=%d %.1f tok/s (x%.2f)\n",
                 m.name.c_str(), row["c1_tok_s"].get<double>(), median(r1), o.concurrency,
                 row["c32_tok_s"].get<double>(), median(r32));
  }
  if (paths.size() == 1)  // the baseline alone: measure it anyway
    for (int round = 0; round < o.rounds; ++round) {
      measure(baseline, 1, o, round);
      measure(baseline, o.concurrency, o, round);
    }
  auto base_row = describe(baseline, o);
  base_row["c1_vs_baseline"] = 1.0;
  base_row["c32_vs_baseline"] = 1.0;
  rows.push_back(base_row);
  for (auto& r : others) rows.push_back(r);
  for (auto& r : rows) r["threads"] = cpu::num_threads();

  const std::string note =
      "decode tok/s: generated tokens after every request's first, greedy, ignore_eos; ratios: "
      "median of runs paired with the baseline (" +
      baseline.name +
      ") in the same round. "
      "expert_share is an ESTIMATE from timing the parts separately: moe_forward over every sparse "
      "layer in turn (one layer's time x the number of sparse layers), over one whole forward "
      "of the same n decode rows.";
  // The table: absent fields as "-", the concurrency in the column names.
  const std::string c = std::to_string(o.concurrency);
  nlohmann::json table = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json t;
    t["model"] = r["model"];
    t["params_M"] = r["params_M"];
    t["active_M"] = r["active_params_M"].is_null() ? nlohmann::json("-") : r["active_params_M"];
    t["c1_tok_s"] = r["c1_tok_s"];
    t["c" + c + "_tok_s"] = r["c32_tok_s"];
    t["c1_vs_" + baseline.name] = r["c1_vs_baseline"];
    t["c" + c + "_vs_" + baseline.name] = r["c32_vs_baseline"];
    t["expert_share_n1"] = r.value("expert_share_n1", nlohmann::json("-"));
    t["expert_share_n" + c] = r.value("expert_share_n32", nlohmann::json("-"));
    table.push_back(t);
  }
  bench::print_report(
      "decode tok/s per family at concurrency 1 and " + c + " (CPU, float32, " +
          std::to_string(o.prompt_len) + "-token prompts, " + std::to_string(o.decode_tokens) +
          " generated tokens, " + std::to_string(o.rounds) + " rounds, " +
          std::to_string(cpu::num_threads()) + " threads)",
      {"model", "params_M", "active_M", "c1_tok_s", "c" + c + "_tok_s", "c1_vs_" + baseline.name,
       "c" + c + "_vs_" + baseline.name, "expert_share_n1", "expert_share_n" + c},
      table);
  std::printf("\n%s\n", note.c_str());
  std::printf("(%.0f s in all)\n", bench::now_seconds() - start);
  if (!o.out.empty()) {
    nlohmann::json doc{{"baseline", baseline.name},
                       {"prompt_len", o.prompt_len},
                       {"decode_tokens", o.decode_tokens},
                       {"concurrency", o.concurrency},
                       {"rounds", o.rounds},
                       {"threads", cpu::num_threads()},
                       {"seconds", bench::now_seconds() - start},
                       {"note", note},
                       {"rows", rows}};
    std::ofstream(o.out) << doc.dump(2) << "\n";
  }
}
