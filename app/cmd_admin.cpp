// `actorllm admin`: the admin API of a running server (list, add, drain and stop replicas;
// list, load and unload models) from the command line. The work is app/admin_command.cpp's.
#include <cstdio>
#include <cstdlib>

#include "app/admin_command.hpp"
#include "app/command.hpp"

namespace actorllm::app {
namespace {

int run_admin(int argc, char** argv) {
  // NOTE: the key is read here, not in config/: it is this command's own input, and the one way
  // to pass it that other users cannot see in `ps`.
  const char* env_key = std::getenv("ACTORLLM_ADMIN_API_KEY");
  return run_admin_command(argc, argv, env_key ? env_key : "", stdout, stderr);
}

const command_registration admin_command(
    "admin",
    {"replicas (list, add, drain, stop) and models (list, load, unload) of a running server",
     run_admin});

}  // namespace
}  // namespace actorllm::app
