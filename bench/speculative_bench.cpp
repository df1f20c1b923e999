// Speculative decoding's speed: decode tok/s with and without each method, on the actor-free
// engine, each as a ratio to plain decoding measured in the same round.
//
//   build/bench/speculative_bench [--k 4] [--decode-tokens 128] [--concurrency 32]
//       [--rounds 3] [--threads 0] [--draft DIR] [--out FILE.json] MODEL
//
// Tasks, all greedy and ignoring EOS:
//   copy  the prompt is a passage the model wrote itself (from BOS) followed by its first 8
//         tokens again: the output mostly quotes the prompt, as when a model edits or repeats
//         a text, where prompt lookup shines;
//   free  free generation after a short prompt of varied ids.
// Rows: single stream for both tasks with each method (ngram; the draft model with --draft),
// then `--concurrency` streams of the free task with n-gram lookup left on and with
// disable_by_batch_size 8 (speculation off while the batch is compute-bound).
//
// Each ratio is the median over rounds of (method / plain) with plain run right before, so the
// machine's drift moves both sides alike. Acceptance: accepted drafts / drafts verified; mean
// acceptance length: tokens per verification (accepted drafts + 1).
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"
#include "bench/engine_runs.hpp"
#include "kernels/cpu/ops.hpp"

using namespace actorllm;

namespace {

struct options {
  int k = 4, decode_tokens = 128, concurrency = 32, rounds = 3, threads = 0;
  std::string model, draft, out;
};

struct method {
  std::string name;
  speculative_config spec;
};

engine_config config_for(const options& o, const speculative_config& spec, int prompt_len) {
  engine_config c;
  c.model.model = o.model;
  const int32_t block_size = 16;
  const int32_t tokens = prompt_len + o.decode_tokens + o.k + 2;
  c.model.max_model_len = (tokens + block_size - 1) / block_size * block_size + block_size;
  c.cache.block_size = block_size;
  c.cache.num_gpu_blocks_override =
      static_cast<int64_t>(o.concurrency) * (c.model.max_model_len / block_size) + 8;
  c.cache.num_cpu_blocks_override = 8;
  c.scheduler.max_num_seqs = std::max(o.concurrency, 1);
  c.parallel.cpu_threads = o.threads;
  c.parallel.device = "cpu";
  c.server.log_stats_interval = 0;
  c.speculative = spec;
  return c;
}

std::vector<generate_request> requests_for(const std::string& task, int count,
                                           const std::vector<int32_t>& passage, int64_t vocab,
                                           int max_tokens) {
  static int64_t serial = 0;  // ids unique over the whole run
  std::vector<generate_request> rs;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> prompt{1};
    if (task == "copy") {
      prompt.insert(prompt.end(), passage.begin(), passage.end());
      prompt.insert(prompt.end(), passage.begin(), passage.begin() + 8);
    } else {
      for (int j = 1; j < 16; ++j)
        prompt.push_back(static_cast<int32_t>(3 + (i * 7919 + j * 104729 + serial) % (vocab - 3)));
    }
    rs.push_back(
        bench::greedy_request(task + std::to_string(serial++), std::move(prompt), max_tokens));
  }
  return rs;
}

struct row_stats {
  std::vector<double> tok_s, ratio;
  speculation_stats spec;
  int64_t steps = 0, plain_steps = 0;
};

}  // namespace

int main(int argc, char** argv) {
  options o;
  bench::read_args(argc, argv,
                   {{"--k", bench::int_flag(o.k)},
                    {"--decode-tokens", bench::int_flag(o.decode_tokens)},
                    {"--concurrency", bench::int_flag(o.concurrency)},
                    {"--rounds", bench::int_flag(o.rounds)},
                    {"--threads", bench::int_flag(o.threads)},
                    {"--draft", bench::string_flag(o.draft)},
                    {"--out", bench::string_flag(o.out)}},
                   o.model);
  if (o.model.empty()) {
    std::fprintf(stderr, "usage: speculative_bench [options] MODEL (see the file's header)\n");
    return 2;
  }
  const double start = bench::now_seconds();

  std::vector<method> methods;
  speculative_config ngram;
  ngram.method = speculative_method::ngram;
  ngram.num_speculative_tokens = o.k;
  ngram.prompt_lookup_min = 2;
  ngram.prompt_lookup_max = 4;
  methods.push_back({"ngram", ngram});
  if (!o.draft.empty()) {
    speculative_config d;
    d.method = speculative_method::draft_model;
    d.draft_model = o.draft;
    d.num_speculative_tokens = o.k;
    methods.push_back({"draft", d});
  }
  speculative_config limited = ngram;
  limited.disable_by_batch_size = 8;

  // The copy task's passage: the model's own greedy text from BOS.
  const int passage_len = 192;
  const int prompt_len = 1 + passage_len + 8;
  llm_engine plain(engine_setup::load(config_for(o, {}, prompt_len)));
  const int64_t vocab = plain.setup().model->config().vocab_size;
  const auto passage =
      run_to_completion(plain, {bench::greedy_request("passage", {1}, passage_len)})[0][0]
          .token_ids;

  std::map<std::string, std::unique_ptr<llm_engine>> engines;
  for (const auto& m : methods)
    engines[m.name] =
        std::make_unique<llm_engine>(engine_setup::load(config_for(o, m.spec, prompt_len)));
  engines["ngram, off from 8"] =
      std::make_unique<llm_engine>(engine_setup::load(config_for(o, limited, prompt_len)));

  struct case_spec {
    std::string task;
    int concurrency;
    std::string method;
  };
  std::vector<case_spec> cases;
  for (const std::string task : {"copy", "free"})
    for (const auto& m : methods) cases.push_back({task, 1, m.name});
  cases.push_back({"free", o.concurrency, "ngram"});
  cases.push_back({"free", o.concurrency, "ngram, off from 8"});

  std::vector<row_stats> stats(cases.size());
  for (int round = 0; round < o.rounds; ++round) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const case_spec& cs = cases[c];
      const auto base = bench::run_requests(
          plain, requests_for(cs.task, cs.concurrency, passage, vocab, o.decode_tokens));
      llm_engine& engine = *engines.at(cs.method);
      const speculation_stats before = engine.stats().speculation;
      const auto r = bench::run_requests(
          engine, requests_for(cs.task, cs.concurrency, passage, vocab, o.decode_tokens));
      const speculation_stats after = engine.stats().speculation;
      row_stats& s = stats[c];
      s.tok_s.push_back(r.decode_tok_s);
      s.ratio.push_back(r.decode_tok_s / base.decode_tok_s);
      s.spec.num_drafts += after.num_drafts - before.num_drafts;
      s.spec.num_draft_tokens += after.num_draft_tokens - before.num_draft_tokens;
      s.spec.num_accepted_tokens += after.num_accepted_tokens - before.num_accepted_tokens;
      s.steps += r.steps;
      s.plain_steps += base.steps;
    }
  }

  nlohmann::json rows = nlohmann::json::array();
  for (size_t c = 0; c < cases.size(); ++c) {
    const row_stats& s = stats[c];
    const auto& sp = s.spec;
    rows.push_back(
        {{"task", cases[c].task},
         {"streams", cases[c].concurrency},
         {"method", cases[c].method},
         {"tok_s", bench::median(s.tok_s)},
         {"vs_plain", bench::median(s.ratio)},
         {"acceptance",
          sp.num_draft_tokens ? double(sp.num_accepted_tokens) / sp.num_draft_tokens : 0.0},
         {"tokens_per_verification",
          sp.num_drafts ? 1.0 + double(sp.num_accepted_tokens) / sp.num_drafts : 0.0},
         {"steps_vs_plain", s.plain_steps ? double(s.steps) / double(s.plain_steps) : 0.0}});
  }
  const std::string title =
      "speculative decoding on " + o.model + ": decode tok/s, k = " + std::to_string(o.k) + ", " +
      std::to_string(o.decode_tokens) + " tokens, " + std::to_string(o.rounds) + " rounds, " +
      std::to_string(cpu::num_threads()) + " threads (CPU)";
  bench::print_report(title,
                      {"task", "streams", "method", "tok_s", "vs_plain", "acceptance",
                       "tokens_per_verification", "steps_vs_plain"},
                      rows);
  std::printf("(%.0f s in all)\n", bench::now_seconds() - start);
  if (!o.out.empty()) {
    nlohmann::json doc{{"model", o.model},   {"draft", o.draft},
                       {"k", o.k},           {"decode_tokens", o.decode_tokens},
                       {"rounds", o.rounds}, {"threads", cpu::num_threads()},
                       {"rows", rows}};
    std::ofstream(o.out) << doc.dump(2) << "\n";
  }
}
