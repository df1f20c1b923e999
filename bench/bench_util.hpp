#pragma once
/// Small helpers shared by the benchmark programs: timing, a measured copy bandwidth
/// (the memory-bandwidth bound's denominator), and a JSON + table printer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

/// Prints rows as a JSON array on one line, then as an aligned table.
inline void print_report(const std::string& title, const std::vector<std::string>& columns,
                         const nlohmann::json& rows) {
  std::printf("%s\n", rows.dump().c_str());
  std::printf("\n%s\n", title.c_str());
  std::vector<size_t> widths;
  for (const auto& c : columns) widths.push_back(std::max<size_t>(c.size(), 10));
  auto cell = [](const nlohmann::json& v) {
    if (v.is_number_float()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f", v.get<double>());
      return std::string(buf);
    }
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  for (const auto& row : rows)
    for (size_t i = 0; i < columns.size(); ++i)
      widths[i] = std::max(widths[i], cell(row.value(columns[i], nlohmann::json())).size());
  for (size_t i = 0; i < columns.size(); ++i)
    std::printf("%-*s  ", int(widths[i]), columns[i].c_str());
  std::printf("\n");
  for (const auto& row : rows) {
    for (size_t i = 0; i < columns.size(); ++i)
      std::printf("%-*s  ", int(widths[i]), cell(row.value(columns[i], nlohmann::json())).c_str());
    std::printf("\n");
  }
}

}  // namespace actorllm::bench
