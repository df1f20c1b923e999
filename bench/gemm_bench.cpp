// The projections of one Llama layer plus the LM head, as the CPU forward runs them: the
// packed GEMM (weights packed once, kernels/cpu/packed_linear.hpp) against OpenBLAS (which
// packs the weights on every call), at decode-sized and prefill-sized batches. Both on the
// calling thread's team; GFLOP/s over the five shapes together, best of a few repeats.
//
//   build/bench/gemm_bench [--dim 768] [--hidden 2048] [--vocab 32000] [--threads 0]
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

struct timed {
  double blas_s = 0, packed_s = 0, flops = 0, max_diff = 0;
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

timed measure(const std::vector<shape>& shapes, int64_t rows) {
  timed t;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const auto& s : shapes) {
    std::vector<float> x(rows * s.in), w(s.out * s.in), y_blas(rows * s.out),
        y_packed(rows * s.out);
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    const cpu::packed_matrix packed = cpu::pack_matrix(w.data(), s.out, s.in);
    const int repeats = rows <= 8 ? 10 : 4;
    t.blas_s += best_seconds(repeats, [&] {
      cpu::linear(x.data(), w.data(), nullptr, rows, s.in, s.out, y_blas.data());
    });
    t.packed_s += best_seconds(
        repeats, [&] { cpu::linear_packed(x.data(), packed, nullptr, rows, y_packed.data()); });
    for (size_t i = 0; i < y_blas.size(); ++i)
      t.max_diff = std::max(t.max_diff, double(std::fabs(y_blas[i] - y_packed[i])));
    t.flops += 2.0 * rows * s.in * s.out;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t dim = 768, hidden = 2048, vocab = 32000, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--dim")
      dim = value;
    else if (flag == "--hidden")
      hidden = value;
    else if (flag == "--vocab")
      vocab = value;
    else if (flag == "--threads")
      threads = value;
    else {
      std::fprintf(stderr, "gemm_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  cpu::set_num_threads(static_cast<int>(threads));
  // qkv (fused), o, gate_up (fused), down, LM head.
  const std::vector<shape> shapes{
      {dim, 3 * dim}, {dim, dim}, {dim, 2 * hidden}, {hidden, dim}, {dim, vocab}};
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t n : {1, 8, 32, 64, 128, 512}) {
    const timed t = measure(shapes, n);
    rows.push_back({{"rows", n},
                    {"openblas_gflops", t.flops / t.blas_s / 1e9},
                    {"packed_gflops", t.flops / t.packed_s / 1e9},
                    {"packed_speedup", t.blas_s / t.packed_s},
                    {"max_abs_diff", t.max_diff},
                    {"threads", cpu::num_threads()}});
  }
  bench::print_report(
      "projections of one layer + LM head, float32",
      {"rows", "openblas_gflops", "packed_gflops", "packed_speedup", "max_abs_diff", "threads"},
      rows);
  return 0;
}
