// The route table: path and method -> endpoint.
#include "api/routes.hpp"

namespace actorllm::api {
namespace {

route make(endpoint target, std::string_view method, const char* allowed) {
  route r;
  r.target = target;
  r.allow = allowed;
  // allowed is a comma-separated list such as "GET" or "POST".
  for (std::string_view rest = allowed; !rest.empty();) {
    const auto comma = rest.find(", ");
    if (rest.substr(0, comma) == method) r.method_allowed = true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  return r;
}

/// The path without its query string and without one trailing slash.
std::string_view path_of(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path;
}

}  // namespace

route find_route(std::string_view method, std::string_view target) {
  const std::string_view path = path_of(target);
  if (path == "/v1/completions") return make(endpoint::completions, method, "POST");
  if (path == "/v1/chat/completions") return make(endpoint::chat_completions, method, "POST");
  if (path == "/v1/responses") return make(endpoint::responses, method, "POST");
  if (path == "/v1/messages") return make(endpoint::messages, method, "POST");
  if (path == "/v1/messages/count_tokens")
    return make(endpoint::messages_count_tokens, method, "POST");
  constexpr std::string_view responses = "/v1/responses/";
  if (path.starts_with(responses)) {
    // {id}, {id}/input_items or {id}/cancel; the id is judged by the handler (404), after
    // the key is checked.
    std::string_view id = path.substr(responses.size());
    const auto slash = id.find('/');
    const std::string_view rest = slash == std::string_view::npos ? "" : id.substr(slash);
    id = id.substr(0, slash);
    route r;
    if (rest.empty()) {
      r = make(endpoint::response, method, "GET, HEAD, DELETE");
      r.pattern = "/v1/responses/{id}";
    } else if (rest == "/input_items") {
      r = make(endpoint::response_input_items, method, "GET, HEAD");
      r.pattern = "/v1/responses/{id}/input_items";
    } else if (rest == "/cancel") {
      r = make(endpoint::response_cancel, method, "POST");
      r.pattern = "/v1/responses/{id}/cancel";
    } else {
      return route{};
    }
    if (id.empty()) return route{};
    r.response_id = std::string(id);
    return r;
  }
  if (path == "/v1/embeddings") return make(endpoint::embeddings, method, "POST");
  if (path == "/v1/models") return make(endpoint::models, method, "GET, HEAD");
  if (path == "/v1/load_lora_adapter") return make(endpoint::load_lora_adapter, method, "POST");
  if (path == "/v1/unload_lora_adapter") return make(endpoint::unload_lora_adapter, method, "POST");
  if (path.starts_with("/v1/models/")) {
    route r = make(endpoint::model, method, "GET, HEAD");
    r.model_id = std::string(path.substr(std::string_view("/v1/models/").size()));
    return r;
  }
  if (path == "/tokenize") return make(endpoint::tokenize, method, "POST");
  if (path == "/detokenize") return make(endpoint::detokenize, method, "POST");
  if (path == "/health") return make(endpoint::health, method, "GET, HEAD");
  // vLLM's alias of /health for SageMaker-style load balancers, which probe with POST too.
  if (path == "/ping") return make(endpoint::health, method, "GET, HEAD, POST");
  if (path == "/version") return make(endpoint::version, method, "GET, HEAD");
  if (path == "/metrics") return make(endpoint::metrics, method, "GET, HEAD");
  if (path == "/v1/ws") return make(endpoint::websocket, method, "GET");
  if (path == "/v1/engine/stats") return make(endpoint::engine_stats, method, "GET, HEAD");
  if (path == "/" || path == "/index.html") {
    route r = make(endpoint::web_page, method, "GET, HEAD");
    r.asset = "index.html";
    return r;
  }
  constexpr std::string_view ui = "/ui/";
  if (path.starts_with(ui)) {
    route r = make(endpoint::web_asset, method, "GET, HEAD");
    r.asset = std::string(path.substr(ui.size()));
    r.pattern = "/ui/{name}";
    return r;
  }
  if (path == "/admin/replicas") return make(endpoint::admin_replicas, method, "GET, POST");
  constexpr std::string_view replicas = "/admin/replicas/";
  if (path.starts_with(replicas)) {
    // {id} or {id}/drain; the id is judged by the handler (400), after the key is checked.
    std::string_view id = path.substr(replicas.size());
    const bool drain = id.ends_with("/drain");
    if (drain) id.remove_suffix(std::string_view("/drain").size());
    if (id.empty() || id.find('/') != std::string_view::npos) return route{};
    route r = drain ? make(endpoint::admin_drain, method, "POST")
                    : make(endpoint::admin_replica, method, "DELETE");
    r.replica_id = std::string(id);
    r.pattern = drain ? "/admin/replicas/{id}/drain" : "/admin/replicas/{id}";
    return r;
  }
  if (path == "/admin/models") return make(endpoint::admin_models, method, "GET, POST");
  constexpr std::string_view models = "/admin/models/";
  if (path.starts_with(models)) {
    // {name}; the name is judged by the handler (400), after the key is checked.
    const std::string_view name = path.substr(models.size());
    if (name.empty() || name.find('/') != std::string_view::npos) return route{};
    route r = make(endpoint::admin_model, method, "DELETE");
    r.model_name = std::string(name);
    r.pattern = "/admin/models/{name}";
    return r;
  }
  return route{};
}

bool is_admin_path(std::string_view target) {
  const std::string_view path = path_of(target);
  return path == "/admin" || path.starts_with("/admin/");
}

}  // namespace actorllm::api
