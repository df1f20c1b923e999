// The replica table: text columns left-aligned, numbers right-aligned, each as wide as its
// widest cell.
#include "app/admin_table.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace actorllm::app {
namespace {

constexpr std::size_t num_columns = 7;
using row = std::array<std::string, num_columns>;

/// Which columns hold numbers (aligned right).
constexpr std::array<bool, num_columns> numeric = {true, false, true, false, true, true, true};

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

}  // namespace

std::string replica_table(const std::vector<replica_view>& replicas) {
  std::vector<row> rows = {{"ID", "DEVICE", "WORKERS", "STATE", "RUNNING", "WAITING", "KV USE"}};
  for (const auto& r : replicas) {
    rows.push_back({std::to_string(r.id), r.device, std::to_string(r.workers), r.state,
                    std::to_string(r.num_running), std::to_string(r.num_waiting),
                    percent(r.kv_cache_usage)});
  }
  std::array<std::size_t, num_columns> width{};
  for (const auto& cells : rows)
    for (std::size_t c = 0; c < num_columns; ++c) width[c] = std::max(width[c], cells[c].size());

  std::string out;
  for (const auto& cells : rows) {
    std::string line;
    for (std::size_t c = 0; c < num_columns; ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c > 0) line += "  ";
      line += numeric[c] ? pad + cells[c] : cells[c] + pad;
    }
    while (line.ends_with(' ')) line.pop_back();
    out += line + "\n";
  }
  if (replicas.empty()) out += "no replicas\n";
  return out;
}

}  // namespace actorllm::app
