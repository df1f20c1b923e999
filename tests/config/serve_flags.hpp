#pragma once
/// Parses `args` as `actorllm serve` does (the engine's and the server's flags) into `c`.
#include <optional>
#include <string>
#include <vector>

#include "config/engine_flags.hpp"

namespace actorllm::testing {

inline std::optional<std::string> parse_serve_flags(engine_config& c,
                                                    std::vector<std::string> args) {
  flag_parser p("actorllm serve", "test");
  add_engine_flags(p, c);
  add_models_flags(p, c.models);
  add_server_flags(p, c);
  std::vector<char*> argv{const_cast<char*>("serve")};
  for (auto& a : args) argv.push_back(a.data());
  return p.parse(static_cast<int>(argv.size()), argv.data());
}

}  // namespace actorllm::testing
