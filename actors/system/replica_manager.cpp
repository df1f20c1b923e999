#include "actors/system/replica_manager.hpp"

#include <chrono>
#include <cstdio>

#include "actors/gpu_worker/kv_budget.hpp"

namespace actorllm {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

admin_outcome refused(int32_t status, std::string why) {
  admin_outcome out;
  out.status = status;
  out.error = std::move(why);
  return out;
}

const replica_view* find(const std::vector<replica_view>& replicas, int32_t id) {
  for (const auto& r : replicas)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace

replica_manager::replica_manager(engine_system& engine, const engine_config& config,
                                 double dead_grace_s)
    : engine_(engine),
      dead_grace_(dead_grace_s),
      autoscale_(config.autoscale),
      policy_(config.autoscale) {
  thread_ = std::thread([this] { run(); });
}

replica_manager::~replica_manager() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void replica_manager::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_all();
}

void replica_manager::run() {
  // The replica gauges are sampled on this thread too, autoscaling or not.
  const auto interval =
      std::chrono::duration<double>(autoscale_.enabled() ? autoscale_.interval_s : 1.0);
  auto next_sample = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (std::chrono::steady_clock::now() >= next_sample) {
      lock.unlock();
      sample();
      lock.lock();
      next_sample = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
      continue;
    }
    if (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      continue;
    }
    wake_.wait_until(lock, next_sample);
  }
}

std::vector<replica_view> replica_manager::snapshot() {
  const auto shapes = engine_.replica_shapes();
  const auto stats = engine_.stats();
  std::vector<replica_view> out;
  for (const auto& [index, shape] : shapes) {
    replica_view v;
    v.id = index;
    v.device = shape.device;
    v.workers = shape.workers;
    v.state = "starting";  // numbered, and not yet known to the router as serving
    for (const auto& s : stats) {
      if (s.replica != index) continue;
      v.state = s.alive ? s.state : "dead";
      v.num_running = s.scheduler.num_running;
      v.num_waiting = s.scheduler.num_waiting;
      v.kv_cache_usage = s.scheduler.device.utilization();
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string replica_manager::capacity_refusal(int32_t count) {
  const engine_setup& setup = engine_.setup();
  if (const int32_t placeable = engine_.replicas_placeable(); placeable < count)
    return std::to_string(count) + " more replica(s) need " +
           std::to_string(count * static_cast<int32_t>(setup.shards.size())) + " free " +
           setup.backend->device() + " device(s), one worker per device, and " +
           std::to_string(placeable) + " more replica(s) can be placed";
  // Each rank's shard holds its share of the KV heads: a replica's block is their sum.
  int64_t block_bytes = 0;
  for (const auto& shard : setup.shards)
    block_bytes +=
        shard->cache_shape(1, setup.runner.block_size, setup.runner.cache_dtype).bytes_per_block();
  // The weights are resident once and shared; a replica adds its KV pools. A CUDA device
  // pool lives on the device, whose room its own backend checks as the worker starts.
  const bool on_host = setup.backend->device() == "cpu";
  const int64_t blocks = int64_t(setup.runner.num_cpu_blocks) +
                         (on_host ? int64_t(setup.runner.num_device_blocks) : 0);
  const int64_t need = int64_t(count) * blocks * block_bytes;
  const int64_t available = available_host_memory();
  if (available <= 0 || need <= available) return {};
  char line[200];
  std::snprintf(line, sizeof line,
                "%d more replica(s) need %.1f MiB of KV cache and %.1f MiB of memory is available",
                count, need / 1048576.0, available / 1048576.0);
  return line;
}

void replica_manager::replicas(std::function<void(std::vector<replica_view>)> done) {
  post([this, done = std::move(done)] { done(snapshot()); });
}

void replica_manager::add_replicas(int32_t count, std::string device,
                                   std::function<void(admin_outcome)> done) {
  post([this, count, device = std::move(device), done = std::move(done)] {
    if (count < 1 || count > max_replicas_per_call)
      return done(refused(400, "count must be in 1.." + std::to_string(max_replicas_per_call)));
    // device: empty or the engine's kind ("cpu", "cuda"): any free device; "cuda:K": device K.
    const std::string ours = engine_.setup().backend->device();
    const std::string kind = device.substr(0, device.find(':'));
    if (!device.empty() && kind != ours)
      return done(refused(400, "this server's replicas run on " + ours + ", not " + device));
    std::optional<int32_t> first;
    if (kind.size() < device.size()) {
      first = std::stoi(device.substr(kind.size() + 1));  // digits: admin_api checked them
      const int32_t visible = engine_.setup().backend->num_devices();
      if (*first >= visible)
        return done(
            refused(400, "no device " + device + ": " + std::to_string(visible) + " visible"));
      if (count != 1)
        return done(refused(400, "device " + device + " places one replica (count must be 1)"));
    }
    if (auto why = capacity_refusal(count); !why.empty()) {
      std::fprintf(stderr, "admin: refused to add replicas: %s\n", why.c_str());
      return done(refused(507, why));
    }
    admin_outcome out;
    out.status = 202;
    for (int32_t i = 0; i < count; ++i)
      if (const int32_t index = engine_.reserve_replica(first); index >= 0)
        out.ids.push_back(index);
    if (out.ids.empty())
      return done(first ? refused(409, device + " is in use by another replica")
                        : refused(503, "the router did not answer"));
    engine_.monitoring().scale_event("up", "admin", static_cast<int32_t>(out.ids.size()));
    policy_.changed(seconds_now());
    done(out);  // 202 as soon as they are numbered; they start below, one by one
    for (int32_t index : out.ids) {
      std::fprintf(stderr, "admin: starting replica %d\n", index);
      engine_.start_replica(index);
    }
  });
}

void replica_manager::take_down(int32_t id, bool at_once, std::function<void(admin_outcome)> done) {
  post([this, id, at_once, done = std::move(done)] {
    const std::string name = "replica " + std::to_string(id);
    const auto now = snapshot();
    const replica_view* r = find(now, id);
    if (!r) return done(refused(404, "no " + name));
    // A drain needs a serving replica; a stop also takes a draining one (to end its wait).
    if (r->state != "serving" && !(at_once && r->state == "draining"))
      return done(refused(409, name + " is " + r->state + "; only a serving replica can be " +
                                   (at_once ? "stopped" : "drained")));
    if (!(at_once ? engine_.stop_replica(id) : engine_.drain_replica(id)))
      return done(refused(409, name + " could not be " + (at_once ? "stopped" : "drained")));
    engine_.monitoring().scale_event("down", "admin", 1);
    policy_.changed(seconds_now());
    admin_outcome out;
    out.status = 202;
    out.ids = {id};
    done(out);
  });
}

void replica_manager::drain_replica(int32_t id, std::function<void(admin_outcome)> done) {
  take_down(id, false, std::move(done));
}

void replica_manager::stop_replica(int32_t id, std::function<void(admin_outcome)> done) {
  take_down(id, true, std::move(done));
}

void replica_manager::forget_long_dead(std::vector<replica_view>& now) {
  const auto at = std::chrono::steady_clock::now();
  std::erase_if(now, [&](const replica_view& r) {
    if (r.state != "dead") {
      dead_since_.erase(r.id);  // serving again (a new worker took a lost one's place)
      return false;
    }
    const auto since = dead_since_.try_emplace(r.id, at).first->second;
    if (at - since < dead_grace_) return false;
    engine_.forget_replica(r.id);
    dead_since_.erase(r.id);
    return true;
  });
}

void replica_manager::sample() {
  auto now = snapshot();
  forget_long_dead(now);
  engine_.monitoring().set_replica_states(now);
  if (autoscale_.enabled()) autoscale_step(now);
}

void replica_manager::autoscale_step(const std::vector<replica_view>& now) {
  const double t = seconds_now();
  const scale_decision d = policy_.observe(t, now);
  switch (d.what) {
    case scale_decision::action::none:
      return;
    case scale_decision::action::add: {
      if (auto why = capacity_refusal(1); !why.empty()) {
        std::fprintf(stderr, "autoscale: would add a replica (%s), but it does not fit: %s\n",
                     d.reason.c_str(), why.c_str());
        return;
      }
      const int32_t index = engine_.reserve_replica();
      if (index < 0) return;
      std::fprintf(stderr, "autoscale: adding replica %d: %s\n", index, d.reason.c_str());
      engine_.monitoring().scale_event("up", d.reason_kind, 1);
      engine_.start_replica(index);
      policy_.changed(seconds_now());  // the cool-down counts from when it serves
      return;
    }
    case scale_decision::action::drain:
      std::fprintf(stderr, "autoscale: draining replica %d: %s\n", d.replica, d.reason.c_str());
      if (engine_.drain_replica(d.replica))
        engine_.monitoring().scale_event("down", d.reason_kind, 1);
      return;
  }
}

}  // namespace actorllm
