// The bounds a CPU step is held to, measured on this machine in this run (issue 43): how fast
// the cores can read memory (a STREAM-style sum over a buffer far larger than the caches) and
// how fast they can multiply-add (independent FMA chains in registers), with one thread and
// with every thread the server's math would use. A served figure divided by its bound is the
// fraction of the machine it reaches:
//   decode at one stream: weight bytes per token x tok/s / read bandwidth;
//   a step of many streams: 2 x parameters x tok/s / FMA peak.
//
//   roofline_bench [--threads N] [--mib M] [--out FILE]
//
// Prints one JSON line and a table; --out writes the JSON object too.
#include <immintrin.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/bench_util.hpp"
#include "kernels/cpu/host_memory.hpp"
#include "kernels/cpu/kernel_isa.hpp"

namespace actorllm {
namespace {

/// Runs fn(index) on `n` threads at once and returns the wall seconds of the slowest.
template <class Fn>
double run_threads(int n, Fn fn) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::vector<double> seconds(n);
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (!go.load(std::memory_order_acquire)) {
      }
      const double t0 = bench::now_seconds();
      fn(t);
      seconds[t] = bench::now_seconds() - t0;
    });
  while (ready.load() < n) {
  }
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  return *std::max_element(seconds.begin(), seconds.end());
}

/// Sums `count` floats from `p` with 8 independent AVX accumulators: loads bound, not adds.
__attribute__((target("avx2,fma"))) float sum_floats(const float* p, size_t count) {
  __m256 acc[8];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (size_t i = 0; i + 64 <= count; i += 64)
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_add_ps(acc[k], _mm256_loadu_ps(p + i + 8 * k));
  for (int k = 1; k < 8; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

/// The buffer is allocated as the packed weights are (cpu::allocate_streamed: 2 MB pages
/// where the kernel gives them), so that the bound is the one the weights stream under. With
/// 4 KB pages this machine reads about 30 % slower (23.5 against 33 GB/s on one thread).
using streamed_floats = std::vector<float, cpu::streamed_allocator<float>>;

/// Read bandwidth in bytes/s with `threads` threads, each summing its share of `buffer`;
/// best of `repeats`.
double read_bandwidth(const streamed_floats& buffer, int threads, int repeats) {
  const size_t share = buffer.size() / threads / 64 * 64;
  std::vector<float> sinks(threads);
  double best = 1e30;
  for (int r = 0; r < repeats; ++r)
    best = std::min(best, run_threads(threads, [&](int t) {
                      sinks[t] += sum_floats(buffer.data() + t * share, share);
                    }));
  volatile float sink = sinks[0];
  static_cast<void>(sink);
  return double(share) * threads * sizeof(float) / best;
}

constexpr int fma_chains = 12;  // enough independent chains to cover the FMA latency
constexpr int64_t fma_rounds = 20'000'000;

__attribute__((target("avx2,fma"))) float fma_avx2() {
  __m256 acc[fma_chains];
  for (int k = 0; k < fma_chains; ++k) acc[k] = _mm256_set1_ps(1.0f + k * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < fma_rounds; ++i) {
#pragma GCC unroll 16  // the chains stay in registers only when the loop is unrolled
    for (auto& c : acc) c = _mm256_fmadd_ps(c, a, b);
  }
  for (int k = 1; k < fma_chains; ++k) acc[0] = _mm256_add_ps(acc[0], acc[k]);
  return _mm256_cvtss_f32(acc[0]);
}

__attribute__((target("avx512f"))) float fma_avx512() {
  __m512 acc[fma_chains];
  for (int k = 0; k < fma_chains; ++k) acc[k] = _mm512_set1_ps(1.0f + k * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < fma_rounds; ++i) {
#pragma GCC unroll 16
    for (auto& c : acc) c = _mm512_fmadd_ps(c, a, b);
  }
  for (int k = 1; k < fma_chains; ++k) acc[0] = _mm512_add_ps(acc[0], acc[k]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  return lanes[0] + lanes[15];
}

/// Float32 FLOP/s (a multiply-add counts two) with `threads` threads, in the widest vectors
/// the CPU kernels use.
double fma_peak(int threads, bool avx512) {
  std::vector<float> sinks(threads);
  const double seconds =
      run_threads(threads, [&](int t) { sinks[t] = avx512 ? fma_avx512() : fma_avx2(); });
  volatile float sink = sinks[0];
  static_cast<void>(sink);
  const double lanes = avx512 ? 16 : 8;
  return 2.0 * lanes * fma_chains * double(fma_rounds) * threads / seconds;
}

}  // namespace
}  // namespace actorllm

int main(int argc, char** argv) {
  using namespace actorllm;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int mib = 512;
  std::string out, unused;
  bench::read_args(argc, argv,
                   {{"--threads", bench::int_flag(threads)},
                    {"--mib", bench::int_flag(mib)},
                    {"--out", bench::string_flag(out)}},
                   unused);
  const bool avx512 = cpu::uses_avx512(cpu::kernel_isa_in_use());
  streamed_floats buffer(size_t(mib) << 18, 1.0f);  // mib MiB of floats, touched
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json doc{{"buffer_mib", mib}, {"vectors", avx512 ? "avx512" : "avx2"}};
  for (int n : {1, threads}) {
    const double read = read_bandwidth(buffer, n, 5);
    const double flops = fma_peak(n, avx512);
    rows.push_back({{"threads", n}, {"read_gb_s", read / 1e9}, {"fma_gflop_s", flops / 1e9}});
    doc[n == 1 ? "one_thread" : "all_threads"] = {
        {"threads", n}, {"read_bytes_per_s", read}, {"fma_flop_per_s", flops}};
    if (threads == 1) break;
  }
  doc["copy_bytes_per_s"] = bench::measure_copy_bandwidth();
  bench::print_report("Roofline of this machine: read bandwidth (sum of " + std::to_string(mib) +
                          " MiB) and float32 FMA peak (" + (avx512 ? "AVX-512" : "AVX2") + ")",
                      {"threads", "read_gb_s", "fma_gflop_s"}, rows);
  if (!out.empty()) std::ofstream(out) << doc.dump(2) << "\n";
  return 0;
}
