#pragma once
/// A worker "process" inside the test: its own actor system (its own middleman and node id),
/// a worker on the model `config` names, and the join as `actorllm worker --connect` does it.
/// The server under test and this node talk over loopback TCP, as two processes would.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <variant>

#include "actors/gpu_worker/gpu_worker_actor.hpp"
#include "actors/system/cluster_registry_actor.hpp"
#include "actors/system/engine_system.hpp"
#include "actors/system/worker_backend.hpp"

namespace actorllm::testing {

class remote_worker_node {
 public:
  explicit remote_worker_node(const engine_config& config, std::string name = "remote-test")
      : config_(config),
        system_(actor_config_),
        setup_(std::make_unique<engine_setup>(engine_setup::load(config, select_backend(config)))),
        name_(std::move(name)) {
    // Not detached, as in `actorllm worker` (CAF 0.17 can hang at shutdown on detached ones).
    worker_ = system_.spawn(gpu_worker, setup_->model, setup_->backend, setup_->runner, name_,
                            mailbox_probe{});
  }
  /// Stops the worker as `actorllm worker` does on SIGTERM: waits for its actor to end and
  /// gives the network layer a moment to send its down message, so that the server sees a
  /// clean exit (user_shutdown), not a broken link.
  ~remote_worker_node() {
    caf::scoped_actor self{system_};
    self->monitor(worker_);
    caf::anon_send_exit(worker_, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {}, caf::after(std::chrono::seconds(10)) >> [] {});
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  remote_worker_node(const remote_worker_node&) = delete;
  remote_worker_node& operator=(const remote_worker_node&) = delete;

  /// What `actorllm worker` sends: its secret, its model's identity and its pools.
  join_request request(std::string secret) const {
    join_request r;
    r.secret = std::move(secret);
    r.model = identify_model(config_);
    r.info = {name_, setup_->runner.num_device_blocks, setup_->runner.num_cpu_blocks,
              setup_->runner.block_size, "cpu"};
    return r;
  }
  std::variant<joined_cluster, std::string> join(uint16_t port, join_request request) {
    return join_cluster(system_, "127.0.0.1", port, std::move(request), worker_);
  }
  std::variant<joined_cluster, std::string> join(uint16_t port, std::string secret) {
    return join(port, request(std::move(secret)));
  }
  /// Ends the worker as abruptly as CAF can from inside (the server sees it go down).
  void kill() { caf::anon_send_exit(worker_, caf::exit_reason::kill); }
  caf::actor_system& system() { return system_; }

 private:
  engine_config config_;
  engine_actor_config actor_config_;
  caf::actor_system system_;
  std::unique_ptr<engine_setup> setup_;
  std::string name_;
  worker_actor worker_;
};

}  // namespace actorllm::testing
