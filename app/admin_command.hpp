#pragma once
/// `actorllm admin` without the process around it, so that tests/app can run it against a
/// server: list, add, drain or stop the replicas of a running server, and list, load or unload
/// its models, through its admin API.
#include <cstdio>
#include <string>

namespace actorllm::app {

/// Runs `actorllm admin` with `argv` (argv[0] is "admin"): parses the flags, calls the server,
/// prints the answer (a table for list and models list, the server's JSON otherwise) to `out` and
/// every failure, as one line, to `err`. `env_key` is ACTORLLM_ADMIN_API_KEY's value, used when
/// --admin-api-key is not given. Returns the exit status: 0 done, 1 the server refused or
/// could not be reached, 2 bad usage.
int run_admin_command(int argc, char** argv, const std::string& env_key, std::FILE* out,
                      std::FILE* err);

}  // namespace actorllm::app
