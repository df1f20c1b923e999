#pragma once
/// Subcommands of the `actorllm` program. Each app/cmd_<name>.cpp registers itself with
/// one static `command_registration`, so adding a subcommand touches no other file.
#include <functional>
#include <map>
#include <string>

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

}  // namespace actorllm::app
