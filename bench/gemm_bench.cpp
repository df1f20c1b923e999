// The projections of one Llama layer plus the LM head, as the CPU forward runs them: the
// packed GEMM (weights packed once, kernels/cpu/packed_linear.hpp) in each instruction set the
// CPU runs (AVX2, AVX-512, AVX-512 VNNI), for float32, bf16, int8 and int4 panels, against OpenBLAS
// on float32 (which packs the weights on every call), at decode-sized and prefill-sized batches.
// All on the calling thread's team; GFLOP/s over the five shapes together, best of a few
// repeats, every figure of a row from the same run. Each shape repeats on weights the last
// repeat left in cache; --layers N gives N layers of distinct weights and the LM head instead,
// each pass over all of them timed whole, so that the weights come from DRAM as in a
// model's step.
//
//   build/bench/gemm_bench [--dim 768] [--hidden 2048] [--vocab 32000] [--layers 1]
//       [--threads 0] [--out FILE.json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_linear.hpp"

namespace {

using namespace actorllm;

struct shape {
  int64_t in, out;
};

/// Seconds each way took over the shapes, and their FLOPs and weight bytes.
struct timed {
  double blas_s = 0, flops = 0, weight_bytes = 0, max_diff = 0;
  std::map<cpu::kernel_isa, double> packed_s;
};

template <class F>
double best_seconds(int repeats, F&& run) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const double t0 = bench::now_seconds();
    run();
    best = std::min(best, bench::now_seconds() - t0);
  }
  return best;
}

/// The shapes' weights packed as `format` (the same random values for every format).
std::vector<cpu::packed_matrix> pack_shapes(const std::vector<shape>& shapes,
                                            cpu::weight_format format) {
  std::vector<cpu::packed_matrix> packed;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const auto& s : shapes) {
    std::vector<float> w(s.out * s.in);
    for (auto& v : w) v = dist(rng);
    const cpu::matrix_rows rows{w.data(), cpu::weight_format::f32, s.out};
    packed.push_back(cpu::pack_matrix({&rows, 1}, s.in, format));
  }
  return packed;
}

/// One batch of `rows` through every shape: the packed kernels in each of `isas`, and
/// OpenBLAS on the unpacked weights where `blas` (float32). `chained`: each set's time is
/// the best of a few whole passes over the shapes, not the sum of each shape's best.
timed measure(const std::vector<cpu::packed_matrix>& weights, int64_t rows,
              const std::vector<cpu::kernel_isa>& isas, bool blas, bool chained) {
  timed t;
  if (chained) {
    int64_t widest = 0;
    for (const auto& packed : weights)
      widest = std::max({widest, packed.in_features, packed.out_features});
    std::vector<float> x(rows * widest), y(rows * widest);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto& v : x) v = dist(rng);
    for (cpu::kernel_isa isa : isas) {
      cpu::set_kernel_isa(isa);
      t.packed_s[isa] = best_seconds(3, [&] {
        for (const auto& packed : weights)
          cpu::linear_packed(x.data(), packed, nullptr, rows, y.data());
      });
    }
    if (blas) {
      std::vector<std::vector<float>> unpacked;
      for (const auto& packed : weights) unpacked.push_back(cpu::unpack_matrix(packed));
      t.blas_s = best_seconds(3, [&] {
        for (size_t i = 0; i < weights.size(); ++i)
          cpu::linear(x.data(), unpacked[i].data(), nullptr, rows, weights[i].in_features,
                      weights[i].out_features, y.data());
      });
    }
    for (const auto& packed : weights) {
      t.flops += 2.0 * rows * packed.in_features * packed.out_features;
      t.weight_bytes += static_cast<double>(packed.bytes());
    }
    return t;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int repeats = rows <= 8 ? 10 : 4;
  for (const auto& packed : weights) {
    const int64_t in = packed.in_features, out = packed.out_features;
    std::vector<float> x(rows * in), y_blas(rows * out), y_packed(rows * out);
    for (auto& v : x) v = dist(rng);
    for (cpu::kernel_isa isa : isas) {
      cpu::set_kernel_isa(isa);
      t.packed_s[isa] += best_seconds(
          repeats, [&] { cpu::linear_packed(x.data(), packed, nullptr, rows, y_packed.data()); });
    }
    if (blas) {
      const std::vector<float> w = cpu::unpack_matrix(packed);
      t.blas_s += best_seconds(
          repeats, [&] { cpu::linear(x.data(), w.data(), nullptr, rows, in, out, y_blas.data()); });
      for (size_t i = 0; i < y_blas.size(); ++i)
        t.max_diff = std::max(t.max_diff, double(std::fabs(y_blas[i] - y_packed[i])));
    }
    t.flops += 2.0 * rows * in * out;
    t.weight_bytes += static_cast<double>(packed.bytes());
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t dim = 768, hidden = 2048, vocab = 32000, layers = 1, threads = 0;
  std::string out_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--dim")
      dim = value;
    else if (flag == "--hidden")
      hidden = value;
    else if (flag == "--vocab")
      vocab = value;
    else if (flag == "--layers")
      layers = std::max<int64_t>(1, value);
    else if (flag == "--threads")
      threads = value;
    else if (flag == "--out")
      out_path = argv[i + 1];
    else {
      std::fprintf(stderr, "gemm_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  cpu::set_num_threads(static_cast<int>(threads));
  std::vector<cpu::kernel_isa> isas;
  for (cpu::kernel_isa isa :
       {cpu::kernel_isa::avx2, cpu::kernel_isa::avx2_int8, cpu::kernel_isa::avx512,
        cpu::kernel_isa::avx512_vnni, cpu::kernel_isa::avx512_bf16, cpu::kernel_isa::amx})
    if (cpu::cpu_runs(isa)) isas.push_back(isa);
  const cpu::kernel_isa best = cpu::kernel_isa_in_use();
  // Each layer's qkv (fused), o, gate_up (fused), down; then the LM head.
  std::vector<shape> shapes;
  for (int64_t l = 0; l < layers; ++l)
    shapes.insert(shapes.end(), {{dim, 3 * dim}, {dim, dim}, {dim, 2 * hidden}, {hidden, dim}});
  shapes.push_back({dim, vocab});
  nlohmann::json rows = nlohmann::json::array();
  for (cpu::weight_format format : {cpu::weight_format::f32, cpu::weight_format::bf16,
                                    cpu::weight_format::q8, cpu::weight_format::q4}) {
    const auto weights = pack_shapes(shapes, format);
    const bool blas = format == cpu::weight_format::f32;
    for (int64_t n : {1, 8, 32, 128, 512}) {
      const timed t = measure(weights, n, isas, blas, layers > 1);
      nlohmann::json row{{"weights", cpu::to_string(format)}, {"rows", n}};
      for (cpu::kernel_isa isa : isas)
        row[std::string(cpu::to_string(isa)) + "_gflops"] = t.flops / t.packed_s.at(isa) / 1e9;
      if (t.packed_s.count(cpu::kernel_isa::avx2))
        row["best_vs_avx2"] = t.packed_s.at(cpu::kernel_isa::avx2) / t.packed_s.at(best);
      row["weight_GBps"] = t.weight_bytes / t.packed_s.at(best) / 1e9;
      if (layers > 1) row["layers"] = layers;
      if (blas) {
        row["openblas_gflops"] = t.flops / t.blas_s / 1e9;
        row["vs_openblas"] = t.blas_s / t.packed_s.at(best);
        if (layers == 1) row["max_abs_diff"] = t.max_diff;  // chained passes do not compare
      }
      row["threads"] = cpu::num_threads();
      rows.push_back(row);
    }
  }
  cpu::set_kernel_isa(best);
  if (!out_path.empty()) std::ofstream(out_path) << rows.dump(2) << "\n";
  bench::print_report(layers > 1 ? "projections of " + std::to_string(layers) +
                                       " layers + LM head, whole passes (GFLOP/s; weight GB/s "
                                       "in the best set)"
                                 : "projections of one layer + LM head (GFLOP/s; weight GB/s in "
                                   "the best set)",
                      {"weights", "rows", "avx2_gflops", "avx2_int8_gflops", "avx512_gflops",
                       "avx512_vnni_gflops", "avx512_bf16_gflops", "amx_gflops", "best_vs_avx2",
                       "weight_GBps", "openblas_gflops", "vs_openblas", "threads"},
                      rows);
  return 0;
}
