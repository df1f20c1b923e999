#pragma once
/// Small helpers shared by the benchmark programs: timing, a measured copy bandwidth
/// (the memory-bandwidth bound's denominator), and the product's JSON + table printer
/// (monitoring/report_table.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "monitoring/report_table.hpp"

namespace actorllm::bench {

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

/// STREAM-style copy bandwidth in bytes/s (bytes read + bytes written), best of `repeats`,
/// over buffers far larger than the caches.
inline double measure_copy_bandwidth(size_t bytes = size_t(256) << 20, int repeats = 5) {
  std::unique_ptr<char[]> a(new char[bytes]), b(new char[bytes]);
  std::memset(a.get(), 1, bytes);
  std::memset(b.get(), 2, bytes);
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const double t0 = now_seconds();
    std::memcpy(b.get(), a.get(), bytes);
    best = std::min(best, now_seconds() - t0);
  }
  volatile char sink = b[bytes / 2];
  (void)sink;
  return 2.0 * static_cast<double>(bytes) / best;
}

using actorllm::print_report;

}  // namespace actorllm::bench
