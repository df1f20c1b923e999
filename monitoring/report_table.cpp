#include "monitoring/report_table.hpp"

#include <algorithm>
#include <cstdio>

namespace actorllm {

void print_report(const std::string& title, const std::vector<std::string>& columns,
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

}  // namespace actorllm
