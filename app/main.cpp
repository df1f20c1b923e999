// actorllm: an LLM inference server built as actors. Dispatches to a subcommand.
#include <cstdio>
#include <cstring>
#include <exception>

#include "app/command.hpp"

namespace actorllm::app {

std::map<std::string, command>& commands() {
  static std::map<std::string, command> all;
  return all;
}

namespace {

void print_usage() {
  std::printf(
      "usage: actorllm <command> [options]   (actorllm <command> --help for its flags)\n\n");
  std::printf("commands:\n");
  for (const auto& [name, cmd] : commands())
    std::printf("  %-14s %s\n", name.c_str(), cmd.summary.c_str());
}

}  // namespace
}  // namespace actorllm::app

int main(int argc, char** argv) {
  using namespace actorllm::app;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? exit_usage : 0;
  }
  auto it = commands().find(argv[1]);
  if (it == commands().end()) {
    std::fprintf(stderr, "actorllm: unknown command '%s' (see actorllm --help)\n", argv[1]);
    return exit_usage;
  }
  try {
    return it->second.run(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorllm %s: %s\n", argv[1], e.what());
    return 1;
  }
}
