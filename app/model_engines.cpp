#include "app/model_engines.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "actors/gpu_worker/kv_budget.hpp"
#include "actors/system/worker_backend.hpp"

namespace actorllm::app {
namespace {

using clock = std::chrono::steady_clock;

/// Workers of every replica of a model: each holds KV pools of its own.
int64_t workers_of(const engine_config& config) {
  return int64_t{config.parallel.replicas} * std::max(1, config.parallel.tensor_parallel_size);
}

/// Whether the model's own flags size its KV pools (else it gets a share of the budget).
bool sizes_own_pools(const engine_config& config) {
  return config.cache.num_gpu_blocks_override >= 0 || config.cache.kv_cache_memory_bytes >= 0;
}

/// Hands freed heap pages back to the system, so that an unloaded model's memory leaves the
/// process (glibc keeps large freed chunks otherwise).
void return_freed_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

/// What an unloaded model freed leaves the process. Large blocks (weights, pools) go to mmap at
/// a fixed size, so that freeing them unmaps them: glibc's default threshold grows after the
/// first such free, and a later model's weights would come from the heap. And one arena serves
/// every thread: the free top of a thread arena is only trimmed by a later free in that same
/// arena, so what an engine's threads freed as they ended (24 MiB of a 40 MiB model, measured)
/// stayed resident. Small blocks still come from each thread's cache, without the arena lock.
void map_large_blocks_apart() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_ARENA_MAX, 1);
#endif
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

}  // namespace

model_engines::model_engines(std::vector<model_plan> plans, model_engines_options options,
                             log_function log)
    : options_((map_large_blocks_apart(), std::move(options))),
      log_(std::move(log)),
      split_(options_.kv_budget_bytes, options_.limits.max_loaded > 0
                                           ? options_.limits.max_loaded
                                           : static_cast<int32_t>(plans.size())) {
  for (auto& plan : plans) {
    const std::string root = plan.config.model.model;
    if (auto error = directory_->add(plan.name, root, model_state::unloaded); !error.empty())
      throw std::invalid_argument(error);  // plan_models already refused both causes
    slots_.push_back({std::move(plan), nullptr, model_folder_bytes(root), 0, {}});
  }
}

model_engines::~model_engines() {
  shutdown();
}

void model_engines::start() {
  std::string rule = std::to_string(slots_.size()) + " models share " + mib(split_.budget()) +
                     " of KV cache: each gets an even share of what is " + "left among the " +
                     std::to_string(split_.slots()) + " that may be loaded";
  if (options_.limits.max_loaded > 0)
    rule += " (--max-loaded-models " + std::to_string(options_.limits.max_loaded) + ")";
  log_("INFO", rule);
  // At startup a model loads while it fits beside those before it; the rest wait for demand.
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const std::string name = slots_[i].plan.name;
    const room_plan room = room_for(name);
    if (room.outcome == room_plan::verdict::fits && room.evict.empty()) {
      directory_->set_loading(name);
      load_now(name);
    } else {
      log_("INFO",
           "model '" + name + "': loads on demand (" +
               (room.why.empty() ? "the limits are held by the models before it" : room.why) + ")");
    }
  }
  directory_->usage().on_idle([this](const std::string&) { wake(); });
  directory_->set_demand_loader(
      [this](const std::string& name) { queue_load(name); },
      std::chrono::milliseconds(static_cast<int64_t>(options_.load_timeout_s * 1000)));
  loader_ = std::thread([this] { loader_loop(); });
}

// ---- the loader thread ---------------------------------------------------------------

void model_engines::loader_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    // Woken by a queued load, an admin call or a model going idle; else every 200 ms for the
    // timeouts (--keep-alive, the load timeout).
    wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return woken_ || stopping_; });
    woken_ = false;
    if (stopping_) break;
    lock.unlock();
    directory_->expire_waiters();
    step();
    lock.lock();
  }
}

void model_engines::step() {
  if (trim_due_ && clock::now() >= *trim_due_) {
    trim_due_.reset();
    return_freed_memory();  // what the unloaded engine's last holders freed after it stopped
  }
  finish_drains();
  for (const auto& name : expired_models(residents(), limits()))
    begin_unload(name, "idle for " + seconds_text(options_.limits.keep_alive_s) + " (--keep-alive)",
                 api::model_directory::drain_kind::reload);
  finish_drains();
  load_pending();
}

void model_engines::load_pending() {
  const auto timeout = std::chrono::duration<double>(options_.load_timeout_s);
  while (true) {
    pending_load next;
    {
      std::lock_guard lock(mutex_);
      if (pending_.empty()) return;
      next = pending_.front();
    }
    const auto pop = [this] {
      std::lock_guard lock(mutex_);
      pending_.pop_front();
    };
    if (directory_->state_of(next.name) != model_state::loading) {
      pop();  // unloaded or loaded meanwhile: nothing to do
      continue;
    }
    const std::string who = "model '" + next.name + "': ";
    const room_plan room = room_for(next.name);
    if (room.outcome == room_plan::verdict::never) {
      pop();
      directory_->set_failed(next.name, "cannot load: " + room.why);
      log_("ERROR", who + "cannot load: " + room.why);
      continue;
    }
    if (room.outcome == room_plan::verdict::wait) {
      if (clock::now() - next.since > timeout) {
        pop();
        directory_->set_unloaded(next.name);
        log_("WARN", who + "not loaded: no room within " + seconds_text(timeout.count()) + " (" +
                         room.why + ")");
        continue;
      }
      if (!next.logged_wait) {
        log_("INFO", who + "waits for room: " + room.why);
        std::lock_guard lock(mutex_);
        if (!pending_.empty()) pending_.front().logged_wait = true;
      }
      return;  // in order: the loads behind it wait too
    }
    for (const auto& victim : room.evict)
      begin_unload(victim, "least recently used; room for '" + next.name + "'",
                   api::model_directory::drain_kind::reload);
    finish_drains();
    for (const auto& victim : room.evict)
      if (directory_->state_of(victim) == model_state::draining)
        return;  // a request reached it first: it unloads once that ends, then this loads
    pop();
    load_now(next.name);
  }
}

bool model_engines::load_now(const std::string& name) {
  const std::string who = "model '" + name + "': ";
  engine_config config;
  int64_t share = 0;
  {
    std::lock_guard lock(mutex_);
    const model_slot* slot = slot_of(name);
    if (!slot) return false;
    config = slot->plan.config;
    share = split_.share();
  }
  const int64_t workers = workers_of(config);
  const bool own_size = sizes_own_pools(config);
  if (!own_size) config.cache.kv_cache_memory_bytes = share / workers;
  const auto started = clock::now();
  bool taken = false;  // the split has deducted this model's pools
  int64_t pools = 0;
  try {
    auto setup = std::make_unique<engine_setup>(engine_setup::load(config, select_backend(config)));
    pools = int64_t{setup->runner.num_device_blocks} * setup->kv_block_bytes * workers;
    // Refused before any worker allocates its pool: nothing is loaded half-way.
    {
      std::lock_guard lock(mutex_);
      if (auto why = split_.take(pools); !why.empty()) throw std::runtime_error(why);
      taken = true;
    }
    for (std::string rest = setup->describe(); !rest.empty();) {
      const auto nl = rest.find('\n');
      log_("INFO", who + rest.substr(0, nl));
      rest = nl == std::string::npos ? "" : rest.substr(nl + 1);
    }
    const int64_t weights = std::max(model_folder_bytes(config.model.model),
                                     setup->model ? setup->model->bytes_read_per_token() : 0);
    auto engine = std::make_shared<engine_system>(std::move(setup), metrics_);
    {
      std::lock_guard lock(mutex_);
      model_slot* slot = slot_of(name);
      slot->engine = engine;
      slot->kv_bytes = pools;
      slot->weight_bytes = weights;
      slot->unload_reason.clear();
    }
    directory_->usage().touch(name);
    directory_->set_loaded(name, std::shared_ptr<engine_port>(engine, &engine->client()));
    log_("INFO", who + "loaded in " +
                     seconds_text(std::chrono::duration<double>(clock::now() - started).count()) +
                     ": weights " + mib(weights) + ", KV pools " + mib(pools) + " (" +
                     (own_size ? "sized by its own flags" : "share " + mib(share)) + "), " +
                     mib(split_.left()) + " of " + mib(split_.budget()) + " KV left");
    return true;
  } catch (const std::exception& e) {
    if (taken) {
      std::lock_guard lock(mutex_);
      split_.give_back(pools);
    }
    directory_->set_failed(name, e.what());
    log_("ERROR", who + "failed to load" +
                      (own_size ? std::string() : " (its KV share: " + mib(share) + ")") + ": " +
                      e.what());
    return false;
  }
}

bool model_engines::begin_unload(const std::string& name, std::string reason,
                                 api::model_directory::drain_kind kind) {
  if (!directory_->set_draining(name, kind)) return false;
  {
    std::lock_guard lock(mutex_);
    if (model_slot* slot = slot_of(name)) slot->unload_reason = std::move(reason);
  }
  wake();
  return true;
}

void model_engines::finish_drains() {
  std::vector<std::string> drained;
  {
    std::lock_guard lock(mutex_);
    for (const auto& slot : slots_)
      if (slot.engine && directory_->state_of(slot.plan.name) == model_state::draining &&
          directory_->usage().in_flight(slot.plan.name) == 0)
        drained.push_back(slot.plan.name);
  }
  for (const auto& name : drained) unload_now(name);
}

void model_engines::unload_now(const std::string& name) {
  std::shared_ptr<engine_system> engine;
  int64_t kv = 0;
  int64_t weights = 0;
  std::string reason;
  {
    std::lock_guard lock(mutex_);
    model_slot* slot = slot_of(name);
    if (!slot || !slot->engine) return;
    engine = std::move(slot->engine);
    kv = std::exchange(slot->kv_bytes, 0);
    weights = slot->weight_bytes;
    reason = std::move(slot->unload_reason);
  }
  directory_->set_unloaded(name);  // new requests wait for a fresh load from here
  engine->shutdown();
  engine.reset();  // the last owner but a lookup in progress: its memory goes now
  {
    std::lock_guard lock(mutex_);
    split_.give_back(kv);
  }
  return_freed_memory();
  trim_due_ = clock::now() + std::chrono::seconds(1);
  log_("INFO", "model '" + name + "': unloaded (" + (reason.empty() ? "stopped" : reason) +
                   "): " + mib(weights) + " of weights and " + mib(kv) + " of KV pools freed");
}

// ---- bookkeeping --------------------------------------------------------------------------

std::vector<resident_model> model_engines::residents() const {
  std::vector<resident_model> out;
  std::lock_guard lock(mutex_);
  for (const auto& slot : slots_) {
    if (!slot.engine) continue;
    const std::string& name = slot.plan.name;
    const bool draining = directory_->state_of(name) == model_state::draining;
    const int32_t in_flight = directory_->usage().in_flight(name);
    out.push_back({name, slot.weight_bytes + slot.kv_bytes, slot.kv_bytes,
                   draining || in_flight > 0, directory_->usage().idle_seconds(name)});
  }
  return out;
}

int64_t model_engines::expected_kv_bytes(const model_slot& slot) const {
  const engine_config& c = slot.plan.config;
  return c.cache.kv_cache_memory_bytes >= 0 ? c.cache.kv_cache_memory_bytes * workers_of(c)
                                            : split_.budget() / split_.slots();
}

int64_t model_engines::expected_bytes(const model_slot& slot) const {
  return slot.weight_bytes + expected_kv_bytes(slot);
}

room_plan model_engines::room_for(const std::string& name) const {
  int64_t bytes = 0, kv = 0;
  {
    std::lock_guard lock(mutex_);
    for (const auto& slot : slots_)
      if (slot.plan.name == name) bytes = expected_bytes(slot), kv = expected_kv_bytes(slot);
  }
  return plan_room(residents(), bytes, kv, limits());
}

residency_limits model_engines::limits() const {
  residency_limits limits = options_.limits;
  limits.kv_bytes = options_.kv_budget_bytes;
  return limits;
}

model_engines::model_slot* model_engines::slot_of(const std::string& name) {
  for (auto& slot : slots_)
    if (slot.plan.name == name) return &slot;
  return nullptr;
}

void model_engines::queue_load(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& p : pending_)
      if (p.name == name) return;
    pending_.push_back({name, clock::now(), false});
    woken_ = true;
  }
  wake_.notify_one();
}

void model_engines::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  wake_.notify_one();
}

std::shared_ptr<engine_system> model_engines::first_loaded() const {
  std::lock_guard lock(mutex_);
  for (const auto& slot : slots_)
    if (slot.engine) return slot.engine;
  return nullptr;
}

std::size_t model_engines::num_loaded() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      slots_.begin(), slots_.end(), [](const model_slot& s) { return s.engine != nullptr; }));
}

void model_engines::shutdown() {
  directory_->set_demand_loader(nullptr, std::chrono::milliseconds(0));
  directory_->usage().on_idle(nullptr);
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !loader_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_one();
  if (loader_.joinable()) loader_.join();
  std::vector<std::pair<std::string, std::shared_ptr<engine_system>>> engines;
  {
    std::lock_guard lock(mutex_);
    pending_.clear();
    for (auto& slot : slots_) engines.emplace_back(slot.plan.name, std::move(slot.engine));
  }
  for (auto& [name, engine] : engines) {
    directory_->set_unloaded(name);  // waiters for a load are called back (and refused)
    if (engine) engine->shutdown();
  }
}

// ---- the admin API ------------------------------------------------------------------------

void model_engines::models(std::function<void(std::vector<model_view>)> done) {
  std::vector<model_view> out;
  const auto listed = directory_->models();
  {
    std::lock_guard lock(mutex_);
    for (const auto& slot : slots_) {
      model_view v;
      v.name = slot.plan.name;
      v.path = slot.plan.config.model.model;
      for (const auto& l : listed)
        if (l.info.name == v.name) v.state = to_string(l.state), v.error = l.error;
      v.weight_bytes = slot.weight_bytes;
      v.kv_cache_bytes = slot.kv_bytes;
      v.requests_in_flight = directory_->usage().in_flight(v.name);
      if (slot.engine) v.idle_seconds = directory_->usage().idle_seconds(v.name);
      out.push_back(std::move(v));
    }
  }
  done(std::move(out));
}

void model_engines::load_model(load_model_request request,
                               std::function<void(admin_outcome)> done) {
  admin_outcome out = start_load(std::move(request));
  if (out.ok()) wake_.notify_one();
  done(std::move(out));
}

admin_outcome model_engines::start_load(load_model_request request) {
  const auto refuse = [](int32_t status, std::string why) {
    return admin_outcome{status, std::move(why), {}};
  };
  if (!is_model_name(request.name))
    return refuse(400, "name: '" + request.name + "' is no model name");
  std::lock_guard lock(mutex_);
  if (stopping_) return refuse(503, "the server is stopping");
  model_slot* slot = slot_of(request.name);
  const auto state = directory_->state_of(request.name);
  if (slot && state && *state != model_state::unloaded && *state != model_state::failed)
    return refuse(409, "model '" + request.name + "' is " + to_string(*state));
  if (!slot && request.path.empty())
    return refuse(400, "path: required to add a model this server does not list");
  if (!slot && slots_.size() >= max_served_models)
    return refuse(400, "at most " + std::to_string(max_served_models) + " models are served");
  model_plan plan;
  if (!slot || !request.path.empty() || !request.flags_json.empty()) {
    const std::string path = request.path.empty() ? slot->plan.config.model.model : request.path;
    if (auto why = plan_model(options_.base, {request.name, path}, request.flags_json, plan);
        !why.empty())
      return refuse(400, why);
  } else {
    plan = slot->plan;
  }
  if (!slot) {
    if (auto why = directory_->add(request.name, plan.config.model.model, model_state::unloaded);
        !why.empty())
      return refuse(409, why);
    slots_.push_back({plan, nullptr, 0, 0, {}});
    slot = &slots_.back();
    if (options_.limits.max_loaded <= 0) split_.set_slots(static_cast<int32_t>(slots_.size()));
  }
  slot->plan = std::move(plan);
  slot->weight_bytes = model_folder_bytes(slot->plan.config.model.model);
  const room_plan alone = plan_room({}, expected_bytes(*slot), expected_kv_bytes(*slot), limits());
  if (alone.outcome == room_plan::verdict::never)
    return refuse(507, "model '" + request.name + "' cannot load: " + alone.why);
  directory_->set_loading(request.name);
  pending_.push_back({request.name, clock::now(), false});
  woken_ = true;
  log_("INFO", "model '" + request.name + "': load requested through the admin API");
  return {202, {}, {}};
}

void model_engines::unload_model(std::string name, std::function<void(admin_outcome)> done) {
  const auto state = directory_->state_of(name);
  {
    std::lock_guard lock(mutex_);
    if (!state || !slot_of(name))
      return done(admin_outcome{404, "no model is named '" + name + "'", {}});
  }
  if (*state != model_state::loaded || !begin_unload(name, "unloaded through the admin API",
                                                     api::model_directory::drain_kind::refuse))
    return done(
        admin_outcome{409, "model '" + name + "' is " + to_string(*state) + ", not loaded", {}});
  done(admin_outcome{202, {}, {}});
}

int64_t default_models_kv_budget(const engine_config& base) {
  if (select_backend(base)->device() != "cpu") return 0;
  constexpr int64_t max_default = int64_t{4} << 30;
  return std::min<int64_t>(max_default, static_cast<int64_t>(available_host_memory() *
                                                             base.cache.gpu_memory_utilization));
}

int64_t model_folder_bytes(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code error;
  int64_t total = 0;
  std::size_t seen = 0;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    if (++seen > max_models_dir_entries) break;  // a folder of a model, not of everything
    const std::string ext = it->path().extension().string();
    if (ext != ".safetensors" && ext != ".bin") continue;
    const auto size = fs::file_size(it->path(), error);
    if (!error) total += static_cast<int64_t>(size);
    error.clear();
  }
  return total;
}

}  // namespace actorllm::app
