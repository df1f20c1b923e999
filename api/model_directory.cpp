// The models of a server, and each request handed to the engine of the model it names.
#include "api/model_directory.hpp"

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
  entries_.push_back({std::move(name), std::move(root), state, {}, nullptr});
  return {};
}

bool model_directory::set_loaded(std::string_view name, std::shared_ptr<engine_port> engine) {
  std::unique_lock lock(mutex_);
  entry* e = find_by_name(name);
  if (!e) return false;
  e->state = model_state::loaded;
  e->error.clear();
  e->engine = std::move(engine);
  return true;
}

bool model_directory::set_failed(std::string_view name, std::string why) {
  std::unique_lock lock(mutex_);
  entry* e = find_by_name(name);
  if (!e) return false;
  e->state = model_state::failed;
  e->error = std::move(why);
  e->engine.reset();
  return true;
}

bool model_directory::set_unloaded(std::string_view name) {
  std::unique_lock lock(mutex_);
  entry* e = find_by_name(name);
  if (!e) return false;
  e->state = model_state::unloaded;
  e->error.clear();
  e->engine.reset();
  return true;
}

model_directory::entry* model_directory::find_by_name(std::string_view name) {
  for (auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const model_directory::entry* model_directory::find(std::string_view requested) const {
  if (entries_.empty()) return nullptr;
  if (requested.empty()) return &entries_.front();
  for (const auto& e : entries_)
    if (e.name == requested) return &e;
  // Aliases and adapters are known to a loaded engine alone.
  for (const auto& e : entries_)
    if (e.engine && e.engine->model().answers_to(requested)) return &e;
  return nullptr;
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
  if (e.engine) return {e.engine->model(), e.state, e.error};
  model_info info;
  info.name = e.name;
  info.root = e.root;
  return {std::move(info), e.state, e.error};
}

void model_directory::submit(generate_request request, output_callback on_output) {
  const auto target = lookup(request.model);
  if (target && target->engine) return target->engine->submit(std::move(request), on_output);
  request_output out;
  out.request_id = request.request_id;
  out.finish = finish_reason::error;
  if (target) {
    out.error = model_refusal(listing_of(*target));
    out.error_status = 503;
  } else {
    out.error = "The model `" + request.model + "` does not exist.";
    out.error_status = 404;
  }
  on_output(std::move(out));
}

void model_directory::abort(const std::string& request_id) {
  // Ids are unique across the server: the engines that do not know it ignore it.
  for (const auto& engine : loaded_engines()) engine->abort(request_id);
}

void model_directory::tokenize(generate_request request,
                               std::function<void(tokenize_result)> done) {
  const auto target = lookup(request.model);
  if (target && target->engine) return target->engine->tokenize(std::move(request), done);
  tokenize_result out;
  out.error = target ? model_refusal(listing_of(*target))
                     : "The model `" + request.model + "` does not exist.";
  out.error_status = target ? 503 : 404;
  done(std::move(out));
}

void model_directory::detokenize(std::vector<int32_t> tokens,
                                 std::function<void(detokenize_result)> done) {
  const auto target = lookup("");
  if (target && target->engine) return target->engine->detokenize(std::move(tokens), done);
  done({{}, target ? model_refusal(listing_of(*target)) : "no model is served", 503});
}

bool model_directory::healthy() const {
  for (const auto& engine : loaded_engines())
    if (engine->healthy()) return true;
  return false;
}

engine_health model_directory::health() const {
  std::vector<entry> entries;
  {
    std::shared_lock lock(mutex_);
    entries = entries_;
  }
  engine_health out{false, {}};
  std::string problems;
  for (const auto& e : entries) {
    std::string why;
    if (e.engine) {
      const engine_health h = e.engine->health();
      out.ok = out.ok || h.ok;
      why = h.reason;
    } else {
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

lora_update_result model_directory::load_lora_adapter(const std::string& name,
                                                      const std::string& path) {
  if (find_model(name)) return {"'" + name + "' already names a model or an adapter", 400};
  const auto target = lookup("");
  if (!target || !target->engine) return engine_port::load_lora_adapter(name, path);
  return target->engine->load_lora_adapter(name, path);
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
