// The models of a server, and each request handed to the engine of the model it names.
#include "api/model_directory.hpp"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>

namespace actorllm::api {

std::string model_refusal(const model_listing& model) {
  const std::string named = "the model `" + model.info.name + "`";
  switch (model.state) {
    case model_state::loading:
      return named + " is loading; retry later";
    case model_state::failed:
      return named + " failed to load: " + model.error;
    case model_state::unloaded:
      return named + " is not loaded";
    case model_state::draining:
      return named + " is unloading; retry later";
    default:
      return {};
  }
}

std::string model_directory::add(std::string name, std::string root, model_state state) {
  if (name.empty()) return "a model needs a name";
  std::unique_lock lock(mutex_);
  if (entries_.size() >= max_models)
    return "at most " + std::to_string(max_models) + " models may be served";
  if (find_by_name(name)) return "two models are named '" + name + "'";
  entries_.push_back({std::move(name), std::move(root), state, {}, nullptr, {}, false, {}});
  return {};
}

bool model_directory::change(std::string_view name, model_state state, std::string error,
                             std::shared_ptr<engine_port> engine) {
  std::vector<waiter> waiters;
  std::function<void(const std::string&)> reload;
  {
    std::unique_lock lock(mutex_);
    entry* e = find_by_name(name);
    if (!e) return false;
    // An evicted model that requests wait for loads again as soon as it is unloaded.
    if (state == model_state::unloaded && e->state == model_state::draining && e->reloads &&
        !e->waiters.empty() && demand_loader_) {
      state = model_state::loading;
      reload = demand_loader_;
    }
    e->state = state;
    e->error = std::move(error);
    e->engine = std::move(engine);
    if (state == model_state::loaded || state == model_state::failed) {
      e->reloads = false;
      e->last_info = {};
    }
    // A model that serves or will not load soon no longer keeps anyone waiting.
    if (state != model_state::loading) waiters.swap(e->waiters);
  }
  if (reload) reload(std::string(name));
  for (auto& w : waiters) w.ready();
  return true;
}

bool model_directory::set_loaded(std::string_view name, std::shared_ptr<engine_port> engine) {
  return change(name, model_state::loaded, {}, std::move(engine));
}

bool model_directory::set_failed(std::string_view name, std::string why) {
  return change(name, model_state::failed, std::move(why), nullptr);
}

bool model_directory::set_unloaded(std::string_view name) {
  return change(name, model_state::unloaded, {}, nullptr);
}

bool model_directory::set_loading(std::string_view name) {
  return change(name, model_state::loading, {}, nullptr);
}

bool model_directory::set_draining(std::string_view name, drain_kind kind) {
  std::unique_lock lock(mutex_);
  entry* e = find_by_name(name);
  if (!e || e->state != model_state::loaded) return false;
  e->state = model_state::draining;  // the engine stays: its requests finish on it
  e->reloads = kind == drain_kind::reload;
  e->last_info = e->reloads ? e->engine->model() : model_info{};
  return true;
}

std::optional<model_state> model_directory::state_of(std::string_view name) const {
  std::shared_lock lock(mutex_);
  for (const auto& e : entries_)
    if (e.name == name) return e.state;
  return std::nullopt;
}

void model_directory::set_demand_loader(std::function<void(const std::string&)> load,
                                        std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  demand_loader_ = std::move(load);
  load_timeout_ = timeout;
}

void model_directory::await_model(std::string_view requested, std::function<void()> ready) {
  std::string to_load;
  std::function<void(const std::string&)> load;  // copied under the lock: it may be reset
  {
    std::unique_lock lock(mutex_);
    entry* e = find(requested);
    if (e && waits_for(*e) && e->waiters.size() < max_waiters_per_model) {
      if (e->state == model_state::unloaded) {
        e->state = model_state::loading;
        to_load = e->name;
        load = demand_loader_;
      }
      e->waiters.push_back({std::move(ready), std::chrono::steady_clock::now() + load_timeout_});
      ready = nullptr;
    }
  }
  if (load) load(to_load);
  if (ready) ready();  // served, failed, unknown, or too many waiting: admission answers
}

void model_directory::expire_waiters(std::chrono::steady_clock::time_point now) {
  std::vector<waiter> due;
  {
    std::unique_lock lock(mutex_);
    for (auto& e : entries_) {
      auto late = std::stable_partition(e.waiters.begin(), e.waiters.end(),
                                        [now](const waiter& w) { return w.deadline > now; });
      std::move(late, e.waiters.end(), std::back_inserter(due));
      e.waiters.erase(late, e.waiters.end());
    }
  }
  for (auto& w : due) w.ready();
}

bool model_directory::waits_for(const entry& e) const {
  switch (e.state) {
    case model_state::loading:
      return true;
    case model_state::unloaded:
      return demand_loader_ != nullptr;
    case model_state::draining:
      return e.reloads && demand_loader_ != nullptr;
    default:
      return false;
  }
}

bool model_directory::can_load_on_demand() const {
  if (!demand_loader_) return false;
  for (const auto& e : entries_)
    if (e.state == model_state::unloaded || e.state == model_state::loading) return true;
  return false;
}

model_directory::entry* model_directory::find_by_name(std::string_view name) {
  for (auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

template <class Entries>
auto* model_directory::find_in(Entries& entries, std::string_view requested) {
  if (entries.empty()) return static_cast<decltype(&entries.front())>(nullptr);
  if (requested.empty()) return &entries.front();
  for (auto& e : entries)
    if (e.name == requested) return &e;
  // Aliases and adapters are known to a loaded engine alone.
  for (auto& e : entries)
    if (e.engine && e.engine->model().answers_to(requested)) return &e;
  return static_cast<decltype(&entries.front())>(nullptr);
}

const model_directory::entry* model_directory::find(std::string_view requested) const {
  return find_in(entries_, requested);
}

model_directory::entry* model_directory::find(std::string_view requested) {
  return find_in(entries_, requested);
}

std::optional<model_directory::entry> model_directory::lookup(std::string_view requested) const {
  std::shared_lock lock(mutex_);
  const entry* e = find(requested);
  if (!e) return std::nullopt;
  return *e;
}

std::vector<std::shared_ptr<engine_port>> model_directory::loaded_engines() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<engine_port>> out;
  for (const auto& e : entries_)
    if (e.engine) out.push_back(e.engine);
  return out;
}

model_listing model_directory::listing_of(const entry& e) {
  const bool reloads = e.reloads && e.state != model_state::loaded;
  if (reloads) return {e.last_info, e.state, e.error, true};
  if (e.engine) return {e.engine->model(), e.state, e.error};
  model_info info;
  info.name = e.name;
  info.root = e.root;
  return {std::move(info), e.state, e.error};
}

void model_directory::submit(generate_request request, output_callback on_output) {
  route(std::move(request), std::move(on_output), true);
}

void model_directory::route(generate_request request, output_callback on_output, bool may_wait) {
  std::optional<model_listing> refused;
  std::shared_ptr<engine_port> engine;
  bool waits = false;
  {
    // Counted under the lock that set_draining takes: once a model drains, every request that
    // reached its engine is counted, and the drain waits for it.
    std::shared_lock lock(mutex_);
    if (const entry* e = find(request.model)) {
      if (e->engine && e->state == model_state::loaded) {
        engine = e->engine;
        on_output =
            usage_->begin(request.request_id, e->name, request.params.n, std::move(on_output));
      } else if (may_wait && waits_for(*e)) {
        std::lock_guard parked(parked_mutex_);
        waits = parked_.insert(request.request_id).second;
      }
      if (!engine && !waits) refused = listing_of(*e);
    }
  }
  if (engine) return engine->submit(std::move(request), std::move(on_output));
  if (waits) {
    const std::string model = request.model;
    auto held = std::make_shared<std::pair<generate_request, output_callback>>(
        std::move(request), std::move(on_output));
    return await_model(model, [this, held] {
      bool aborted = false;
      {
        std::lock_guard parked(parked_mutex_);
        aborted = parked_.erase(held->first.request_id) == 0;
      }
      if (!aborted) route(std::move(held->first), std::move(held->second), false);
    });
  }
  request_output out;
  out.request_id = request.request_id;
  out.finish = finish_reason::error;
  if (refused) {
    out.error = model_refusal(*refused);
    out.error_status = 503;
  } else {
    out.error = "The model `" + request.model + "` does not exist.";
    out.error_status = 404;
  }
  on_output(std::move(out));
}

void model_directory::abort(const std::string& request_id) {
  {
    std::lock_guard parked(parked_mutex_);
    if (parked_.erase(request_id) > 0) return;  // it never reached an engine
  }
  // After an abort the engine need not send a last delta: the request ends here.
  if (const auto model = usage_->model_of(request_id)) {
    if (const auto target = lookup(*model); target && target->engine)
      target->engine->abort(request_id);
    usage_->end(request_id);
    return;
  }
  // Ids are unique across the server: the engines that do not know it ignore it.
  for (const auto& engine : loaded_engines()) engine->abort(request_id);
}

void model_directory::tokenize(generate_request request,
                               std::function<void(tokenize_result)> done) {
  auto held = std::make_shared<generate_request>(std::move(request));
  const std::string model = held->model;
  with_engine(
      model, true, [held, done](engine_port& engine) { engine.tokenize(std::move(*held), done); },
      [done](std::string error, int32_t status) {
        tokenize_result out;
        out.error = std::move(error);
        out.error_status = status;
        done(std::move(out));
      });
}

void model_directory::detokenize(detokenize_request request,
                                 std::function<void(detokenize_result)> done) {
  auto held = std::make_shared<detokenize_request>(std::move(request));
  const std::string model = held->model;
  with_engine(
      model, true, [held, done](engine_port& engine) { engine.detokenize(std::move(*held), done); },
      [done](std::string error, int32_t status) {
        done({{}, std::move(error), status});
      });
}

void model_directory::with_engine(std::string model, bool may_wait,
                                  std::function<void(engine_port&)> use,
                                  std::function<void(std::string, int32_t)> refuse) {
  std::optional<entry> target;
  bool waits = false;
  {
    std::shared_lock lock(mutex_);
    if (const entry* e = find(model)) {
      target = *e;
      waits = may_wait && e->state != model_state::loaded && waits_for(*e);
    }
  }
  if (waits) {
    return await_model(model,
                       [this, model, use, refuse] { with_engine(model, false, use, refuse); });
  }
  // Not while it drains: an engine stopping under a call would never answer it.
  if (target && target->engine && target->state == model_state::loaded) return use(*target->engine);
  if (target) return refuse(model_refusal(listing_of(*target)), 503);
  refuse(model.empty() ? "no model is served" : "The model `" + model + "` does not exist.",
         model.empty() ? 503 : 404);
}

bool model_directory::healthy() const {
  for (const auto& engine : loaded_engines())
    if (engine->healthy()) return true;
  std::shared_lock lock(mutex_);
  return can_load_on_demand();
}

engine_health model_directory::health() const {
  std::vector<entry> entries;
  {
    std::shared_lock lock(mutex_);
    entries = entries_;
  }
  engine_health out{false, {}};
  {
    std::shared_lock lock(mutex_);
    out.ok = can_load_on_demand();  // nothing loaded (--keep-alive) is not a failure
  }
  std::string problems;
  for (const auto& e : entries) {
    std::string why;
    if (e.engine) {
      const engine_health h = e.engine->health();
      out.ok = out.ok || h.ok;
      why = h.reason;
    } else if (e.state != model_state::unloaded) {  // unloaded is no fault: it loads on demand
      why = model_refusal(listing_of(e));
    }
    if (!why.empty()) problems += (problems.empty() ? "" : "; ") + ("model " + e.name + ": " + why);
  }
  out.reason = out.ok || !problems.empty() ? problems : "no model is served";
  return out;
}

model_info model_directory::model() const {
  const auto target = lookup("");
  return target ? listing_of(*target).info : model_info{};
}

std::optional<model_listing> model_directory::find_model(std::string_view requested) const {
  const auto target = lookup(requested);
  if (!target) return std::nullopt;
  return listing_of(*target);
}

std::vector<model_listing> model_directory::models() const {
  std::vector<entry> entries;
  {
    std::shared_lock lock(mutex_);
    entries = entries_;
  }
  std::vector<model_listing> out;
  for (const auto& e : entries) out.push_back(listing_of(e));
  return out;
}

std::size_t model_directory::num_models() const {
  std::shared_lock lock(mutex_);
  return entries_.size();
}

lora_update_result model_directory::load_lora_adapter(const lora_update_request& r) {
  if (find_model(r.name)) return {"'" + r.name + "' already names a model or an adapter", 400};
  const auto target = lookup(r.base_model);
  if (!target) return {"The model `" + r.base_model + "` does not exist.", 404};
  if (!target->engine || target->state != model_state::loaded)
    return {model_refusal(listing_of(*target)), 400};
  return target->engine->load_lora_adapter(r);
}

lora_update_result model_directory::unload_lora_adapter(const std::string& name) {
  const auto target = lookup(name);
  if (!target || !target->engine || target->name == name)
    return {"no LoRA adapter is loaded as '" + name + "'", 404};
  return target->engine->unload_lora_adapter(name);
}

std::string model_directory::metrics_text() {
  const auto engines = loaded_engines();
  return engines.empty() ? std::string() : engines.front()->metrics_text();
}

std::string model_directory::engine_stats_json() {
  std::vector<entry> entries;
  {
    std::shared_lock lock(mutex_);
    entries = entries_;
  }
  using json = nlohmann::json;
  json out = json::object();
  json listed = json::array();
  bool top_filled = false;
  for (const auto& e : entries) {
    json item = {{"name", e.name}, {"state", to_string(e.state)}};
    if (!e.error.empty()) item["error"] = e.error;
    if (e.engine) {
      json stats = json::parse(e.engine->engine_stats_json(), nullptr, false);
      if (stats.is_discarded()) stats = json::object();
      // The page that charts one engine reads the first loaded model's fields at the top.
      if (!top_filled && stats.is_object()) out = stats, top_filled = true;
      item["stats"] = std::move(stats);
    }
    listed.push_back(std::move(item));
  }
  out.erase("models");
  out["models"] = std::move(listed);
  return out.dump();
}

void model_directory::on_http_request(std::string_view path, int status) {
  const auto engines = loaded_engines();
  if (!engines.empty()) engines.front()->on_http_request(path, status);
}

std::size_t model_directory::num_waiting() const {
  std::size_t total = 0;
  for (const auto& engine : loaded_engines()) total += engine->num_waiting();
  return total;
}

}  // namespace actorllm::api
