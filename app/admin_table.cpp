// The admin tables: text columns left-aligned, numbers right-aligned, each as wide as its
// widest cell.
#include "app/admin_table.hpp"

#include <algorithm>
#include <cstdio>
#include <span>

namespace actorllm::app {
namespace {

using row = std::vector<std::string>;

/// `rows` (the header first, every row as long as `numeric`) as aligned lines; `numeric`
/// says which columns hold numbers (aligned right). Trailing blanks are dropped.
std::string aligned(const std::vector<row>& rows, std::span<const bool> numeric) {
  std::vector<std::size_t> width(numeric.size(), 0);
  for (const auto& cells : rows)
    for (std::size_t c = 0; c < numeric.size(); ++c) width[c] = std::max(width[c], cells[c].size());

  std::string out;
  for (const auto& cells : rows) {
    std::string line;
    for (std::size_t c = 0; c < numeric.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c > 0) line += "  ";
      line += numeric[c] ? pad + cells[c] : cells[c] + pad;
    }
    while (line.ends_with(' ')) line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

/// "512 B", "1.5 KiB", "256.0 MiB", "1.4 GiB".
std::string bytes(int64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(n) / 1024.0;
  std::size_t unit = 0;
  for (; value >= 1024.0 && unit + 1 < std::size(units); ++unit) value /= 1024.0;
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0fs", s);
  return text;
}

}  // namespace

std::string replica_table(const std::vector<replica_view>& replicas) {
  constexpr bool numeric[] = {true, false, true, false, true, true, true};
  std::vector<row> rows = {{"ID", "DEVICE", "WORKERS", "STATE", "RUNNING", "WAITING", "KV USE"}};
  for (const auto& r : replicas) {
    rows.push_back({std::to_string(r.id), r.device, std::to_string(r.workers), r.state,
                    std::to_string(r.num_running), std::to_string(r.num_waiting),
                    percent(r.kv_cache_usage)});
  }
  std::string out = aligned(rows, numeric);
  if (replicas.empty()) out += "no replicas\n";
  return out;
}

std::string model_table(const std::vector<model_view>& models) {
  constexpr bool numeric[] = {false, false, true, true, true, true, false};
  std::vector<row> rows = {{"NAME", "STATE", "WEIGHTS", "KV CACHE", "IN FLIGHT", "IDLE", "PATH"}};
  std::string errors;
  for (const auto& m : models) {
    rows.push_back({m.name, m.state, bytes(m.weight_bytes), bytes(m.kv_cache_bytes),
                    std::to_string(m.requests_in_flight), seconds(m.idle_seconds), m.path});
    if (!m.error.empty()) errors += m.name + ": " + m.error + "\n";
  }
  std::string out = aligned(rows, numeric);
  if (models.empty()) out += "no models\n";
  return out + errors;
}

}  // namespace actorllm::app
