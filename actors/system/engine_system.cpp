#include "actors/system/engine_system.hpp"

#include <algorithm>
#include <caf/io/all.hpp>
#include <cstdio>

#include "actors/cache_engine/cache_engine_actor.hpp"
#include "actors/gpu_worker/gpu_worker_actor.hpp"
#include "actors/request_router/request_router_actor.hpp"
#include "actors/system/actor_thread_release.hpp"
#include "actors/system/cluster_registry_actor.hpp"
#include "actors/system/worker_backend.hpp"
#include "kernels/cpu/thread_team.hpp"

namespace actorllm {

engine_actor_config::engine_actor_config() {
  register_message_types(*this);
  load<caf::io::middleman>();
  // NOTE: the step's math runs on its own thread team inside the (detached) worker; the
  // actors' own work is light, so two scheduler threads suffice. They share one queue and
  // sleep on a condition variable when idle: the default work-stealing threads poll with
  // 50 us sleeps for tens of milliseconds after every job, which wakes them hundreds of
  // times during each forward pass and preempts the math threads.
  set("scheduler.max-threads", 2);
  set("scheduler.policy", caf::atom("sharing"));
  set("logger.console", caf::atom("none"));
}

engine_system::engine_system(const engine_config& config)
    : engine_system(config, select_backend(config)) {}

engine_system::engine_system(const engine_config& config,
                             std::shared_ptr<const backend_provider> backend)
    : engine_system(
          std::make_unique<engine_setup>(engine_setup::load(config, std::move(backend)))) {}

engine_system::engine_system(std::unique_ptr<engine_setup> setup,
                             std::shared_ptr<metrics_registry> metrics)
    : system_(actor_config_),
      setup_(std::move(setup)),
      monitoring_(std::make_unique<engine_monitoring>(
          setup_->served_model_name, setup_->max_model_len,
          setup_->config.server.log_stats_interval, std::move(metrics))),
      prompts_(std::make_shared<prompt_builder>(setup_->make_prompt_builder())),
      devices_(setup_->backend->num_devices(), static_cast<int32_t>(setup_->shards.size())) {
  const actor_thread_release release;  // built on the serve command's or a loader's thread
  const engine_config& config = setup_->config;
  auto remote_factory = [this](caf::actor_system&, worker_actor worker, const worker_info& info,
                               int32_t index) {
    scheduler_options options = setup_->scheduler;
    options.num_device_blocks = info.num_device_blocks;
    options.num_cpu_blocks = info.num_cpu_blocks;
    options.num_tier_blocks = 0;  // a remote worker's tier is its own business
    // A remote worker cannot be respawned from here: if it dies, its replica ends, and the
    // router moves its requests to the others.
    {
      std::lock_guard lock(owned_mutex_);
      replicas_[index] = replica_record{{"remote:" + info.name, 1}, {}, false};
    }
    own(caf::actor_cast<caf::actor>(worker), index);
    return spawn_replica(
        index, {std::move(worker)}, nullptr, options,
        "replica " + std::to_string(index) + " (remote worker '" + info.name + "')");
  };
  // NOTE: the actors on a step's critical path (router, scheduler, gateway) run detached, on
  // threads of their own that wake at once when a message arrives. CAF 0.17's shared
  // scheduler threads poll with sleeps of up to 10 ms once idle, and they are idle for the
  // whole of a long forward pass: each step would wait that long for its result message.
  router_hooks hooks;
  hooks.on_mailbox = [m = monitoring_.get()](size_t depth) {
    m->set_mailbox_depth("router", depth);
  };
  hooks.on_replica_down = [m = monitoring_.get()](int32_t replica, const std::string& reason,
                                                  bool retired) {
    m->replica_down(replica, reason, retired);
  };
  hooks.on_replica_retired = [this](int32_t replica) { stop_actors(replica); };
  hooks.on_route = [m = monitoring_.get()](route_reason reason, int32_t cached, int32_t blocks) {
    m->route(to_string(reason), cached, blocks);
  };
  router_ = system_.spawn<caf::detached>(
      request_router, prompts_, std::vector<scheduler_actor>{}, remote_factory, std::move(hooks),
      config.scheduler.stream_interval,
      routing_options{config.parallel.routing, config.parallel.routing_balance_tokens,
                      setup_->scheduler.block_size});
  own(caf::actor_cast<caf::actor>(router_));
  for (int32_t i = 0; i < config.parallel.replicas; ++i) add_replica();

  model_info info{setup_->served_model_name, config.model.model,
                  setup_->max_model_len,     static_cast<int64_t>(std::time(nullptr)),
                  setup_->model_aliases,     setup_->sampling};
  info.embeddings = config.model.embeds();
  info.embedding_size = static_cast<int32_t>(setup_->model->config().hidden_size);
  info.pooling = config.model.pooling_type == "MEAN" ? pooling_type::mean : pooling_type::last;
  info.normalize = config.model.normalize_embeddings;
  info.parsers = output_parsers{config.server.enable_auto_tool_choice,
                                config.server.tool_call_parser, config.server.reasoning_parser};
  client_ = std::make_unique<engine_client>(system_, router_, std::move(info), monitoring_.get(),
                                            setup_->loras, config.lora.runtime_updates);
}

engine_system::~engine_system() {
  shutdown();
}

worker_actor engine_system::spawn_local_worker(int32_t replica, int32_t rank,
                                               std::shared_ptr<cpu::host_all_reduce> group) {
  const std::string name = "replica" + std::to_string(replica) + "-worker" + std::to_string(rank);
  model_runner_config runner = setup_->runner;
  runner.all_reduce = std::move(group);
  runner.tp_rank = rank;
  {
    std::lock_guard lock(owned_mutex_);
    // Placed by reserve_replica; a respawned worker returns to its rank's device.
    if (auto placed = devices_.acquire(replica)) runner.device_index = placed->at(rank);
  }
  // Detached: the forward pass occupies its own thread, never one of the actors' scheduler threads.
  auto worker = system_.spawn<caf::detached>(gpu_worker, setup_->shards.at(rank), setup_->backend,
                                             runner, name, monitoring_->probe_for(name));
  own(caf::actor_cast<caf::actor>(worker), replica);
  return worker;
}

scheduler_actor engine_system::spawn_replica(int32_t index, std::vector<worker_actor> workers,
                                             worker_factory respawn, scheduler_options options,
                                             std::string label) {
  monitoring_->replica_serving(index, std::move(label));
  auto cache = system_.spawn(
      cache_engine,
      std::function<void(const cache_report&, size_t)>(
          [m = monitoring_.get(), name = "cache_engine-" + std::to_string(index)](
              const cache_report&, size_t depth) { m->set_mailbox_depth(name, depth); }),
      monitoring_->probe_for("cache_engine-" + std::to_string(index)));
  const cache_config_values cache_values{options.block_size, options.num_device_blocks,
                                         options.num_cpu_blocks,
                                         setup_->config.cache.swap_space_gib};
  scheduler_hooks hooks = monitoring_->hooks_for(index, cache_values);
  for (size_t rank = 0; rank < workers.size(); ++rank)
    hooks.on_worker(static_cast<int32_t>(rank), true);
  auto scheduler = system_.spawn<caf::detached>(
      scheduler_shell, options, std::move(workers), cache,
      caf::actor_cast<replica_sink_actor>(router_), std::move(respawn), std::move(hooks),
      scheduler_shell_options{index, options.scheduler.async_scheduling,
                              std::chrono::milliseconds(static_cast<int64_t>(
                                  options.scheduler.worker_timeout_s * 1000.0))});
  own(caf::actor_cast<caf::actor>(cache), index);
  own(caf::actor_cast<caf::actor>(scheduler), index);
  return scheduler;
}

int32_t engine_system::add_replica() {
  const actor_thread_release release;  // called from threads outside the actors
  const int32_t index = reserve_replica();
  if (index < 0 || !start_replica(index)) return -1;
  return index;
}

int32_t engine_system::reserve_replica(std::optional<int32_t> first) {
  const actor_thread_release release;  // called from threads outside the actors
  {
    // Refused before the router numbers it: a replica that cannot be placed takes no index.
    std::lock_guard lock(owned_mutex_);
    if (!devices_.placeable(first)) {
      std::fprintf(stderr, "add_replica: no free device (one worker per device)\n");
      return -1;
    }
  }
  caf::scoped_actor self{system_};
  int32_t index = -1;
  self->request(router_, std::chrono::seconds(30), reserve_atom::value)
      .receive(
          [&](int32_t i) { index = i; },
          [&](caf::error& e) { std::fprintf(stderr, "add_replica: %s\n", to_string(e).c_str()); });
  if (index < 0) return -1;
  std::string placement;
  {
    std::lock_guard lock(owned_mutex_);
    if (devices_.acquire(index, first)) {
      placement = devices_.label(index);
      replicas_[index] =
          replica_record{{placement, static_cast<int32_t>(setup_->shards.size())}, {}, false};
    }
  }
  if (placement.empty()) {
    // Another caller took the devices while the router answered.
    std::fprintf(stderr, "add_replica: no free device for replica %d (one worker per device)\n",
                 index);
    self->request(router_, std::chrono::seconds(30), retire_atom::value, index)
        .receive([](bool) {}, [](caf::error&) {});
    return -1;
  }
  if (placement != "cpu") std::fprintf(stderr, "replica %d: on %s\n", index, placement.c_str());
  return index;
}

int32_t engine_system::replicas_placeable() {
  std::lock_guard lock(owned_mutex_);
  return devices_.replicas_free();
}

bool engine_system::start_replica(int32_t index) {
  const actor_thread_release release;  // called from threads outside the actors
  // One worker per tensor-parallel rank, each with its shard; the ranks of a replica sum their
  // partial activations through one host all-reduce group (the role NCCL plays on GPUs).
  const auto tp = static_cast<int32_t>(setup_->shards.size());
  auto new_group = [tp] { return tp > 1 ? std::make_shared<cpu::host_all_reduce>(tp) : nullptr; };
  auto group = new_group();
  std::vector<worker_actor> workers;
  for (int32_t rank = 0; rank < tp; ++rank)
    workers.push_back(spawn_local_worker(index, rank, group));
  // A worker answers once its backend is built (weights on the device, KV pools allocated):
  // the replica is starting until then, and serves nothing.
  caf::scoped_actor self{system_};
  std::string failure;
  for (const auto& w : workers)
    self->request(w, std::chrono::minutes(5), info_atom::value)
        .receive([](const worker_info&) {}, [&](caf::error& e) { failure = to_string(e); });
  if (!failure.empty()) {
    std::fprintf(stderr, "replica %d: a worker failed to start (%s)\n", index, failure.c_str());
    self->request(router_, std::chrono::seconds(30), retire_atom::value, index)
        .receive([](bool) {}, [](caf::error&) {});
    stop_actors(index);
    return false;
  }
  {
    std::lock_guard lock(owned_mutex_);
    if (initial_workers_.size() <= static_cast<size_t>(index)) initial_workers_.resize(index + 1);
    initial_workers_[index] = workers;
  }
  // Replacements come as a whole group (ranks 0..tp-1 in order): rank 0 starts a fresh one,
  // because a lost rank leaves its peers' group unusable. The old group is aborted first, so
  // that survivors waiting in it for the lost rank return (with an error) instead of hanging.
  auto respawn_group = std::make_shared<std::shared_ptr<cpu::host_all_reduce>>(group);
  worker_factory respawn = [this, index, new_group, respawn_group](caf::actor_system&,
                                                                   int32_t rank) {
    if (rank == 0) {
      if (*respawn_group) (*respawn_group)->abort();
      *respawn_group = new_group();
    }
    return spawn_local_worker(index, rank, *respawn_group);
  };
  auto scheduler = spawn_replica(index, std::move(workers), std::move(respawn), setup_->scheduler,
                                 "replica " + std::to_string(index));
  bool serving = false;
  self->request(router_, std::chrono::seconds(30), replica_atom::value, index, scheduler)
      .receive(
          [&](bool ok) { serving = ok; },
          [&](caf::error& e) { std::fprintf(stderr, "add_replica: %s\n", to_string(e).c_str()); });
  if (!serving) stop_actors(index);  // stopped while it was starting
  return serving;
}

bool engine_system::drain_replica(int32_t index) {
  const actor_thread_release release;  // called from threads outside the actors
  caf::scoped_actor self{system_};
  bool ok = false;
  self->request(router_, std::chrono::seconds(30), drain_atom::value, index)
      .receive([&](bool b) { ok = b; }, [&](caf::error&) {});
  return ok;
}

bool engine_system::stop_replica(int32_t index) {
  const actor_thread_release release;  // called from threads outside the actors
  caf::scoped_actor self{system_};
  bool ok = false;
  self->request(router_, std::chrono::seconds(30), retire_atom::value, index)
      .receive([&](bool b) { ok = b; }, [&](caf::error&) {});
  return ok;
}

std::vector<std::pair<int32_t, engine_system::replica_shape>> engine_system::replica_shapes() {
  std::lock_guard lock(owned_mutex_);
  std::vector<std::pair<int32_t, replica_shape>> out;
  for (const auto& [index, record] : replicas_) out.emplace_back(index, record.shape);
  return out;
}

void engine_system::forget_replica(int32_t index) {
  stop_actors(index);
  {
    std::lock_guard lock(owned_mutex_);
    if (replicas_.erase(index) == 0) return;
    std::erase(stopped_order_, index);
  }
  monitoring_->forget_replica(index);
}

void engine_system::stop_actors(int32_t replica) {
  std::vector<caf::actor> actors;
  {
    std::lock_guard lock(owned_mutex_);
    auto it = replicas_.find(replica);
    if (it == replicas_.end() || it->second.stopped) return;
    it->second.stopped = true;
    actors.swap(it->second.actors);
    // Its devices go to the next replica. Its workers free their memory as they exit, just
    // after: a replica placed there at once may find the device still full and fail to start.
    devices_.release(replica);
    // Only the last few stopped replicas stay listed (the monitoring keeps as many).
    stopped_order_.push_back(replica);
    while (stopped_order_.size() > max_stopped_listed) {
      replicas_.erase(stopped_order_.front());
      stopped_order_.pop_front();
    }
    if (static_cast<size_t>(replica) < initial_workers_.size()) initial_workers_[replica].clear();
    // Their handles go too, so that nothing keeps a stopped worker's memory alive.
    std::erase_if(owned_, [&](const caf::actor& a) {
      return std::find(actors.begin(), actors.end(), a) != actors.end();
    });
  }
  for (auto& a : actors) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  std::fprintf(stderr, "replica %d: stopped (%zu actors)\n", replica, actors.size());
}

std::vector<replica_stats> engine_system::stats() {
  const actor_thread_release release;  // called from threads outside the actors
  caf::scoped_actor self{system_};
  std::vector<replica_stats> out;
  self->request(router_, std::chrono::seconds(30), stats_atom::value)
      .receive([&](std::vector<replica_stats>& s) { out = std::move(s); }, [&](caf::error&) {});
  return out;
}

std::vector<worker_actor> engine_system::initial_workers(int32_t replica) {
  std::lock_guard lock(owned_mutex_);
  return initial_workers_.at(replica);
}

std::variant<uint16_t, std::string> engine_system::publish(uint16_t port, const std::string& host,
                                                           const std::string& secret) {
  const actor_thread_release release;  // called from threads outside the actors
  std::shared_ptr<const cluster_admission> admission;
  try {
    admission = std::make_shared<cluster_admission>(secret, identify_model(setup_->config));
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  auto join_point = system_.spawn(cluster_registry, std::move(admission), router_);
  own(caf::actor_cast<caf::actor>(join_point));
  auto bound = caf::io::publish(join_point, port, host.empty() ? nullptr : host.c_str(), true);
  if (!bound) return to_string(bound.error());
  return *bound;
}

void engine_system::own(caf::actor actor, int32_t replica) {
  std::lock_guard lock(owned_mutex_);
  replica_record* record = nullptr;
  if (replica >= 0)
    if (auto it = replicas_.find(replica); it != replicas_.end()) record = &it->second;
  // A replica without a record was stopped long enough ago to be forgotten.
  if (stopped_ || (replica >= 0 && (!record || record->stopped))) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    return;
  }
  if (record) record->actors.push_back(actor);
  owned_.push_back(std::move(actor));
}

void engine_system::shutdown() {
  std::vector<caf::actor> owned;
  {
    std::lock_guard lock(owned_mutex_);
    if (stopped_) return;
    stopped_ = true;
    owned.swap(owned_);
  }
  if (client_) client_->set_healthy(false);
  client_.reset();
  // Self-ticking schedulers keep the system alive: tell everyone to exit, then wait.
  for (auto& a : owned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  initial_workers_.clear();
  system_.await_all_actors_done();
}

}  // namespace actorllm
