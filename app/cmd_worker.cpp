// `actorllm worker --connect HOST:PORT`: a worker in its own process (or on another machine)
// that joins a running server through CAF's middleman; the server builds a replica around it.
#include <caf/io/all.hpp>
#include <cstdio>
#include <thread>

#include "actors/system/engine_system.hpp"
#include "actors/gpu_worker/gpu_worker_actor.hpp"
#include "actors/system/worker_backend.hpp"
#include "app/command.hpp"
#include "app/stop_signals.hpp"
#include "config/engine_flags.hpp"

namespace actorllm::app {
namespace {

int run_worker(int argc, char** argv) {
  engine_config config;
  config.model.model = "../shared/models/stories260K";
  std::string connect;
  std::string name = "remote-worker";
  flag_parser p(
      "actorllm worker --connect HOST:PORT [MODEL] [options]",
      "Loads the model and its KV cache here and joins the server published at HOST:PORT\n"
      "(actorllm serve --cluster-port PORT). The server runs a scheduler for it as a new replica.");
  add_engine_flags(p, config);
  p.add_string("--connect", "HOST:PORT of the server's cluster port", connect);
  p.add_string("--name", "name of this worker in the server's logs and metrics", name);
  if (auto stop = parse_flags(p, argc, argv, "actorllm worker")) return *stop;
  const auto colon = connect.rfind(':');
  int64_t port = 0;
  if (colon == std::string::npos || !parse_number(connect.substr(colon + 1), port).empty() ||
      port < 1 || port > 65535) {
    std::fprintf(stderr, "actorllm worker: --connect: expected HOST:PORT (got '%s')\n",
                 connect.c_str());
    return exit_usage;
  }
  const std::string host = connect.substr(0, colon);
  if (auto errors = config.validate(); !errors.empty()) {
    std::fprintf(stderr, "actorllm worker: %s\n", errors.front().c_str());
    return exit_usage;
  }

  std::unique_ptr<engine_setup> setup;
  try {
    setup = std::make_unique<engine_setup>(engine_setup::load(config, select_backend(config)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorllm worker: %s\n", e.what());
    return 1;
  }
  engine_actor_config actor_config;
  caf::actor_system system{actor_config};
  auto router = system.middleman().remote_actor<router_actor>(host, static_cast<uint16_t>(port));
  if (!router) {
    std::fprintf(stderr, "actorllm worker: cannot reach %s: %s\n", connect.c_str(),
                 to_string(router.error()).c_str());
    return 1;
  }
  auto worker =
      system.spawn<caf::detached>(gpu_worker, setup->model, setup->backend, setup->runner, name);
  caf::anon_send(*router, join_atom::value, worker);
  std::fprintf(stderr, "actorllm worker: '%s' joined %s with %d KV blocks\n", name.c_str(),
               connect.c_str(), setup->runner.num_device_blocks);

  catch_stop_signals();
  std::atomic<bool> server_gone{false};
  auto watcher = system.spawn([&server_gone, r = *router](caf::event_based_actor* self) {
    self->monitor(r);
    self->set_down_handler([&server_gone, self](caf::down_msg&) {
      server_gone = true;
      self->quit();
    });
  });
  while (!stop_requested() && !server_gone)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::fprintf(stderr, "actorllm worker: %s\n",
               server_gone ? "the server went away; exiting" : "stopping");
  bound_shutdown("actorllm worker");
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
  return 0;
}

const command_registration registration("worker",
                                        {"join a running server as a remote worker", run_worker});

}  // namespace
}  // namespace actorllm::app
