// `actorllm worker --connect HOST:PORT`: a worker in its own process (or on another machine)
// that joins a running server through CAF's middleman; the server builds a replica around it.
#include <caf/io/all.hpp>
#include <cstdio>
#include <thread>

#include "actors/gpu_worker/gpu_worker_actor.hpp"
#include "actors/system/cluster_registry_actor.hpp"
#include "actors/system/engine_system.hpp"
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
      "(actorllm serve --cluster-port PORT). The server runs a scheduler for it as a new replica.\n"
      "It admits the worker only with the cluster's secret (--cluster-secret-file) and the same\n"
      "model (config.json, weights, tokenizer, vocabulary, --block-size), and says what differs\n"
      "otherwise. The worker exits (status 1) when the server goes away.\n"
      "--tensor-parallel-size above 1 is refused: a remote worker holds the whole model.");
  add_engine_flags(p, config);
  add_cluster_flags(p, config.cluster, false);
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
  if (config.parallel.tensor_parallel_size > 1) {
    // The server builds a one-worker replica around a remote worker: a shard alone would
    // answer with a fraction of the model's activations, that is, garbage.
    std::fprintf(stderr,
                 "actorllm worker: --tensor-parallel-size %d: a remote worker serves the whole "
                 "model on its own; use 1 here (tensor parallelism: serve "
                 "--tensor-parallel-size N)\n",
                 config.parallel.tensor_parallel_size);
    return exit_usage;
  }
  if (auto why = config.cluster.refusal(host); !why.empty()) {
    std::fprintf(stderr, "actorllm worker: %s\n", why.c_str());
    return exit_usage;
  }

  std::unique_ptr<engine_setup> setup;
  join_request request;
  try {
    setup = std::make_unique<engine_setup>(engine_setup::load(config, select_backend(config)));
    request.model = identify_model(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorllm worker: %s\n", e.what());
    return 1;
  }
  request.secret = config.cluster.secret;
  engine_actor_config actor_config;
  caf::actor_system system{actor_config};
  // NOTE: not detached, unlike the server's workers: CAF 0.17 deadlocks now and then (every
  // other run here) while waiting for a detached actor's thread at shutdown (actor-framework
  // issue 1196), and this process is nothing but the worker. The forward pass occupies one of
  // the two scheduler threads, which sleep on a condition variable ("sharing"), so the next
  // plan is still picked up at once.
  auto worker =
      system.spawn(gpu_worker, setup->model, setup->backend, setup->runner, name, mailbox_probe{});
  auto stop_worker = [&] { caf::anon_send_exit(worker, caf::exit_reason::user_shutdown); };
  {
    caf::scoped_actor self{system};
    std::string error = "no answer";
    self->request(worker, std::chrono::minutes(5), info_atom::value)
        .receive([&](worker_info& info) { request.info = std::move(info), error.clear(); },
                 [&](caf::error& e) { error = to_string(e); });
    if (!error.empty()) {
      std::fprintf(stderr, "actorllm worker: the worker did not start: %s\n", error.c_str());
      stop_worker();
      return 1;
    }
  }
  auto joined = join_cluster(system, host, static_cast<uint16_t>(port), request, worker);
  if (auto* why = std::get_if<std::string>(&joined)) {
    std::fprintf(stderr, "actorllm worker: %s\n", why->c_str());
    stop_worker();
    return 1;
  }
  const cluster_actor join_point = std::get<joined_cluster>(joined).join_point;
  std::fprintf(stderr, "actorllm worker: '%s' joined %s as replica %d with %d KV blocks\n",
               name.c_str(), connect.c_str(), std::get<joined_cluster>(joined).replica,
               setup->runner.num_device_blocks);

  catch_stop_signals();
  std::atomic<bool> server_gone{false};
  // The join point's down message says the server went away (its process ended, or the
  // connection broke). NOTE: the watcher needs a behavior of its own: an actor without one
  // ends at once in CAF 0.17, monitors and all.
  auto watcher = system.spawn(
      [&server_gone](caf::event_based_actor* self, cluster_actor join_point) -> caf::behavior {
        self->monitor(join_point);
        self->set_down_handler([&server_gone, self](caf::down_msg&) {
          server_gone = true;
          self->quit();
        });
        return {[](tick_atom) {}};
      },
      join_point);  // an argument: CAF 0.17 binds a null tuple for a function taking none
  while (!stop_requested() && !server_gone)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (server_gone)
    std::fprintf(stderr, "actorllm worker: the server at %s went away; exiting\n", connect.c_str());
  else
    std::fprintf(stderr, "actorllm worker: stopping\n");
  bound_shutdown("actorllm worker");
  {
    // Wait for the worker to end, then let the network layer send its down message: the
    // server retires a replica whose worker left cleanly (user_shutdown), but counts a
    // broken connection, which a process exiting first would look like, as a failure.
    caf::scoped_actor self{system};
    self->monitor(worker);
    stop_worker();
    self->receive([](caf::down_msg&) {}, caf::after(std::chrono::seconds(10)) >> [] {});
    if (!server_gone) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
  return server_gone ? 1 : 0;
}

const command_registration worker_command("worker",
                                          {"join a running server as a remote worker", run_worker});

}  // namespace
}  // namespace actorllm::app
