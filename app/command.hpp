#pragma once
/// Subcommands of the `actorllm` program. Each app/cmd_<name>.cpp registers itself with
/// one static `command_registration`, so adding a subcommand touches no other file.
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "config/flag_parser.hpp"

namespace actorllm::app {

struct command {
  std::string summary;                            ///< one line for `actorllm --help`
  std::function<int(int argc, char** argv)> run;  ///< argv[0] is the subcommand's name
};

std::map<std::string, command>& commands();

struct command_registration {
  command_registration(const std::string& name, command cmd) {
    commands().emplace(name, std::move(cmd));
  }
};

/// Exit code for a bad flag or value (one clear line on stderr, never a stack trace).
inline constexpr int exit_usage = 2;

/// Parses a subcommand's flags. Returns the code to exit with where the command stops here
/// (after printing --help, or one line naming the bad flag), nullopt where it goes on.
inline std::optional<int> parse_flags(flag_parser& p, int argc, char** argv, const char* command) {
  if (auto error = p.parse(argc, argv)) {
    std::fprintf(stderr, "%s: %s\n", command, error->c_str());
    return exit_usage;
  }
  if (p.help_requested()) {
    std::printf("%s", p.help().c_str());
    return 0;
  }
  return std::nullopt;
}

}  // namespace actorllm::app
