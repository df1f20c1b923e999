#pragma once
/// A benchmark's or a command's results as one JSON line (for scripts) followed by an aligned
/// table (for people): `actorllm bench` and the programs in bench/ print through it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace actorllm {

/// Prints `rows` (objects keyed by `columns`) as a JSON array on one line, then `title` and
/// the rows as a table, floats with two decimals.
void print_report(const std::string& title, const std::vector<std::string>& columns,
                  const nlohmann::json& rows);

}  // namespace actorllm
