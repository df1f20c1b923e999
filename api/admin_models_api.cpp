// The models' admin API: its bodies and its calls of the model_admin_port.
#include "api/admin_models_api.hpp"

#include <nlohmann/json.hpp>

#include "api/openai_call.hpp"
#include "config/served_models.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

std::string name_rule() {
  return "1 to " + std::to_string(max_model_name_length) +
         " letters, digits, '.', '_', '-' or ':', the first a letter or digit";
}

/// Calls `done` with the answer to an admin_outcome: 202 and model_state_json(name, state)
/// when it succeeded.
std::function<void(admin_outcome)> answer_outcome(std::function<void(admin_answer)> done,
                                                  std::string name, std::string_view state) {
  return [done = std::move(done), name = std::move(name), state](admin_outcome outcome) {
    if (!outcome.ok()) {
      const api_error error = model_admin_error(outcome);
      return done({error.status, error_json(error)});
    }
    // 202 whatever 2xx the port chose: the load or the drain is under way, not finished.
    done({202, model_state_json(name, state)});
  };
}

}  // namespace

std::optional<api_error> parse_load_model(std::string_view body, load_model_request& out) {
  out = load_model_request{};
  json parsed;
  if (auto error = parse_json_object(body, parsed)) return error;
  // A null is refused by name rather than read as absent, as in POST /admin/replicas.
  bool named = false;
  for (const auto& [field, value] : parsed.items()) {
    if (field == "name") {
      if (!value.is_string() || !is_model_name(value.get_ref<const std::string&>()))
        return bad_request("name must be a model name (" + name_rule() + ")", "name");
      out.name = value.get<std::string>();
      named = true;
    } else if (field == "path") {
      // NUL would cut the folder's name short in the file system's calls.
      if (!value.is_string() || value.get_ref<const std::string&>().empty() ||
          value.get_ref<const std::string&>().find('\0') != std::string::npos)
        return bad_request("path must be a non-empty string, the model's folder", "path");
      out.path = value.get<std::string>();
    } else if (field == "flags") {
      if (!value.is_object())
        return bad_request("flags must be a JSON object of the model's own flags", "flags");
      out.flags_json = value.dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
      return bad_request(
          "unknown field '" + field + "' (POST /admin/models takes name, path and flags)", field);
    }
  }
  if (!named) return bad_request("name is required: the model to load", "name");
  return std::nullopt;
}

std::optional<api_error> check_model_name(std::string_view name) {
  if (is_model_name(name)) return std::nullopt;
  return bad_request("the model name must be " + name_rule() + ", got '" +
                         std::string(name.substr(0, max_model_name_length)) + "'",
                     "name");
}

std::string models_json(const std::vector<model_view>& models) {
  json data = json::array();
  for (const auto& m : models) {
    json item = {{"id", m.name}, {"object", "model"}, {"path", m.path}, {"state", m.state}};
    if (!m.error.empty()) item["error"] = m.error;
    item["weight_bytes"] = m.weight_bytes;
    item["kv_cache_bytes"] = m.kv_cache_bytes;
    item["requests_in_flight"] = m.requests_in_flight;
    item["idle_seconds"] = m.idle_seconds;
    data.push_back(std::move(item));
  }
  return to_wire({{"object", "list"}, {"data", std::move(data)}});
}

std::optional<std::vector<model_view>> parse_models_json(std::string_view body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("data") || !parsed["data"].is_array())
    return std::nullopt;
  std::vector<model_view> models;
  try {
    for (const auto& item : parsed["data"]) {
      model_view m;
      m.name = item.at("id").get<std::string>();
      m.path = item.at("path").get<std::string>();
      m.state = item.at("state").get<std::string>();
      if (item.contains("error")) m.error = item["error"].get<std::string>();
      m.weight_bytes = item.at("weight_bytes").get<int64_t>();
      m.kv_cache_bytes = item.at("kv_cache_bytes").get<int64_t>();
      m.requests_in_flight = item.at("requests_in_flight").get<int32_t>();
      m.idle_seconds = item.at("idle_seconds").get<double>();
      models.push_back(std::move(m));
    }
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return models;
}

std::string model_state_json(std::string_view name, std::string_view state) {
  return to_wire({{"id", name}, {"state", state}});
}

api_error model_admin_error(const admin_outcome& outcome) {
  api_error error = admin_error(outcome);
  if (error.status == 404) error.code = "model_not_found";
  return error;
}

void run_model_admin_call(model_admin_port& port, const route& r, std::string_view method,
                          std::string_view body, std::function<void(admin_answer)> done) {
  const auto refuse = [&done](const api_error& error) { done({error.status, error_json(error)}); };
  if (r.target == endpoint::admin_models && method == "GET") {
    return port.models([done = std::move(done)](std::vector<model_view> models) {
      done({200, models_json(models)});
    });
  }
  if (r.target == endpoint::admin_models) {
    load_model_request load;
    if (auto error = parse_load_model(body, load)) return refuse(*error);
    std::string name = load.name;
    return port.load_model(std::move(load),
                           answer_outcome(std::move(done), std::move(name), "loading"));
  }
  if (auto error = check_model_name(r.model_name)) return refuse(*error);
  port.unload_model(r.model_name, answer_outcome(std::move(done), r.model_name, "draining"));
}

}  // namespace actorllm::api
