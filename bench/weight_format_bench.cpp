// Decode speed of one checkpoint stored four ways, float32, its 16-bit type, int8 and int4
// (the weight store of model/weight_options.hpp), and of quantized checkpoints of the same
// shape as shipped, at concurrency 1 and 32, on the CPU forward (llama_model::forward over the
// paged cache, no engine around it).
//
//   build/bench/weight_format_bench [--decode-tokens 64] [--concurrency 32] [--rounds 3]
//       [--threads 0] [--isa best|all|avx2|avx2_int8|avx512|avx512_vnni|avx512_bf16] [--fp8
//       FP8_MODEL]
//       [--checkpoint NAME=DIR]...
//       [--out FILE.json] MODEL
//
// MODEL is a bf16 or f16 checkpoint (scripts/make_random_model.py --shape 110M --dtype bf16);
// FP8_MODEL, when given, the same shape with float8 projections (--quantize fp8-channel), a
// further variant; each --checkpoint another (e.g. gptq4=DIR of --quantize gptq4), named NAME.
// All models stay loaded. Each round measures, for each concurrency, float32 then the
// others back to back, and each ratio to float32 is taken within its round;
// the median over rounds is reported (a shared VM drifts by tens of percent within minutes).
// --isa all measures every instruction set of the packed kernels the CPU runs, each in the
// same round, and also reports each format's rate against its own AVX2 rate.
// A run: every sequence prefilled with a 16-token prompt, then `decode_tokens` steps of one
// token per sequence; decode tok/s = sequences * steps / the steps' time.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <tuple>

#include "bench/bench_util.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "model/llama_model.hpp"

using namespace actorllm;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

/// Decode tok/s of `num_seqs` sequences decoding together for `steps` steps.
double decode_tok_s(const llama_model& model, int num_seqs, int steps) {
  const auto& c = model.config();
  const int32_t block_size = 16, prompt_len = 16;
  const int32_t blocks_per_seq = (prompt_len + steps) / block_size + 1;
  kv_cache cache(model.cache_shape(num_seqs * blocks_per_seq, block_size));
  std::vector<std::vector<int32_t>> tables(num_seqs, std::vector<int32_t>(blocks_per_seq));
  for (int s = 0; s < num_seqs; ++s)
    std::iota(tables[s].begin(), tables[s].end(), s * blocks_per_seq);
  forward_workspace ws;
  forward_batch batch;
  std::vector<float> logits;
  std::vector<int32_t> next(num_seqs);
  for (int s = 0; s < num_seqs; ++s) {
    std::vector<int32_t> prompt(prompt_len);
    for (int i = 0; i < prompt_len; ++i)
      prompt[i] = static_cast<int32_t>(1 + (s * 7919 + i * 104729) % (c.vocab_size - 1));
    batch.add_sequence(prompt, 0, tables[s], block_size, true);
  }
  batch.finalize();
  model.forward(batch, cache, ws, logits);
  auto argmax = [&](int s) {
    const float* row = logits.data() + static_cast<int64_t>(s) * c.vocab_size;
    return static_cast<int32_t>(std::max_element(row, row + c.vocab_size) - row);
  };
  for (int s = 0; s < num_seqs; ++s) next[s] = argmax(s);
  const double t0 = bench::now_seconds();
  for (int step = 0; step < steps; ++step) {
    batch.clear();
    for (int s = 0; s < num_seqs; ++s) {
      const int32_t one[] = {next[s]};
      batch.add_sequence(one, prompt_len + step, tables[s], block_size, true);
    }
    batch.finalize();
    model.forward(batch, cache, ws, logits);
    for (int s = 0; s < num_seqs; ++s) next[s] = argmax(s);
  }
  return num_seqs * steps / (bench::now_seconds() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  int decode_tokens = 64, concurrency = 32, rounds = 3, threads = 0;
  std::string model_dir, out, fp8_dir, isa_choice = "best";
  std::vector<std::pair<std::string, std::string>> checkpoints;  // --checkpoint NAME=DIR
  bool bad_usage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--decode-tokens")
      decode_tokens = std::atoi(value().c_str());
    else if (arg == "--concurrency")
      concurrency = std::atoi(value().c_str());
    else if (arg == "--rounds")
      rounds = std::atoi(value().c_str());
    else if (arg == "--threads")
      threads = std::atoi(value().c_str());
    else if (arg == "--out")
      out = value();
    else if (arg == "--isa")
      isa_choice = value();
    else if (arg == "--fp8")
      fp8_dir = value();
    else if (arg == "--checkpoint") {
      const std::string v = value();
      const size_t eq = v.find('=');
      if (eq == std::string::npos)
        bad_usage = true;
      else
        checkpoints.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else
      model_dir = arg;
  }
  std::vector<cpu::kernel_isa> isas;
  for (cpu::kernel_isa isa :
       {cpu::kernel_isa::avx2, cpu::kernel_isa::avx2_int8, cpu::kernel_isa::avx512,
        cpu::kernel_isa::avx512_vnni, cpu::kernel_isa::avx512_bf16})
    if (cpu::cpu_runs(isa) && (isa_choice == "all" || isa_choice == cpu::to_string(isa)))
      isas.push_back(isa);
  if (isa_choice == "best") isas.push_back(cpu::kernel_isa_in_use());
  if (bad_usage || model_dir.empty() || rounds < 1 || isas.empty()) {
    std::fprintf(stderr,
                 "usage: weight_format_bench [--decode-tokens N] [--concurrency N] [--rounds N] "
                 "[--threads N] [--isa best|all|avx2|avx2_int8|avx512|avx512_vnni|avx512_bf16 (one "
                 "this CPU runs)] "
                 "[--fp8 FP8_MODEL] [--checkpoint NAME=DIR]... [--out FILE.json] MODEL\n");
    return 2;
  }
  cpu::set_num_threads(threads);
  struct variant {
    std::string name;
    std::unique_ptr<llama_model> model;
  };
  std::vector<variant> variants;
  variants.push_back({"float32", std::make_unique<llama_model>(model_dir, tp_shard{},
                                                               weight_options{"float32", "none"})});
  variants.push_back({"", std::make_unique<llama_model>(model_dir)});  // --dtype auto
  variants.back().name = cpu::to_string(variants.back().model->storage().format);
  variants.push_back({"int8", std::make_unique<llama_model>(model_dir, tp_shard{},
                                                            weight_options{"auto", "int8"})});
  variants.push_back({"int4", std::make_unique<llama_model>(model_dir, tp_shard{},
                                                            weight_options{"auto", "int4"})});
  if (!fp8_dir.empty()) variants.push_back({"float8_e4m3", std::make_unique<llama_model>(fp8_dir)});
  for (const auto& [name, dir] : checkpoints)
    variants.push_back({name, std::make_unique<llama_model>(dir)});
  for (auto& v : variants) v.model->prepare_cpu_weights();

  const std::vector<int> concurrencies = {1, concurrency};
  // (variant, isa, concurrency) -> per-round tok/s, ratio to the same set's float32, and
  // ratio to the same format's AVX2 rate.
  using key = std::tuple<size_t, cpu::kernel_isa, int>;
  std::map<key, std::vector<double>> rates, ratios, vs_avx2;
  for (int r = 0; r < rounds; ++r) {
    for (int c : concurrencies) {
      for (cpu::kernel_isa isa : isas) {
        cpu::set_kernel_isa(isa);
        double float32 = 0;
        for (size_t v = 0; v < variants.size(); ++v) {
          const double rate = decode_tok_s(*variants[v].model, c, decode_tokens);
          if (v == 0) float32 = rate;
          rates[{v, isa, c}].push_back(rate);
          ratios[{v, isa, c}].push_back(rate / float32);
          if (const auto avx2 = rates.find({v, cpu::kernel_isa::avx2, c}); avx2 != rates.end())
            vs_avx2[{v, isa, c}].push_back(rate / avx2->second.back());
        }
      }
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  for (int c : concurrencies)
    for (cpu::kernel_isa isa : isas)
      for (size_t v = 0; v < variants.size(); ++v) {
        nlohmann::json row{{"weights", variants[v].name},
                           {"isa", cpu::to_string(isa)},
                           {"concurrency", c},
                           {"decode_tok_s", median(rates[{v, isa, c}])},
                           {"vs_float32", median(ratios[{v, isa, c}])},
                           {"weight_MB_per_token", variants[v].model->bytes_read_per_token() / 1e6},
                           {"rounds", rounds},
                           {"decode_tokens", decode_tokens},
                           {"threads", cpu::num_threads()}};
        if (vs_avx2.count({v, isa, c})) row["vs_avx2"] = median(vs_avx2[{v, isa, c}]);
        rows.push_back(row);
      }
  if (!out.empty()) std::ofstream(out) << rows.dump(2) << "\n";
  bench::print_report("decode tok/s by weight storage (CPU, " +
                          std::filesystem::path(model_dir).filename().string() + ")",
                      {"weights", "isa", "concurrency", "decode_tok_s", "vs_float32", "vs_avx2",
                       "weight_MB_per_token"},
                      rows);
}
