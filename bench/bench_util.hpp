#pragma once
/// Small helpers shared by the benchmark programs: timing, a measured copy bandwidth
/// (the memory-bandwidth bound's denominator), and the product's JSON + table printer
/// (monitoring/report_table.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
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

/// What to do with one flag's value.
using flag_setter = std::function<void(const std::string& value)>;
inline flag_setter int_flag(int& target) {
  return [&target](const std::string& v) { target = std::atoi(v.c_str()); };
}
inline flag_setter string_flag(std::string& target) {
  return [&target](const std::string& v) { target = v; };
}

/// Reads `--name value` pairs into `flags` and the one other argument into `positional`.
/// Throws std::runtime_error on an unknown flag or one without its value.
inline void read_args(int argc, char** argv, const std::map<std::string, flag_setter>& flags,
                      std::string& positional) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      positional = a;
      continue;
    }
    const auto it = flags.find(a);
    if (it == flags.end()) throw std::runtime_error("unknown flag " + a);
    if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
    it->second(argv[++i]);
  }
}

}  // namespace actorllm::bench
