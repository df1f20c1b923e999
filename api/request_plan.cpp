// The decision about a request: checks, keys, route, and the answer or the work to start.
#include "api/request_plan.hpp"

#include "api/access.hpp"
#include "api/anthropic_protocol.hpp"
#include "api/endpoint_bodies.hpp"
#include "api/responses_api.hpp"

namespace actorllm::api {
namespace {

request_plan answered(answer reply) {
  request_plan plan;
  plan.reply = std::move(reply);
  return plan;
}

request_plan refused(const api_error& error, error_style style) {
  return answered(error_answer(error, style));
}

/// `plan`, its answer ending the connection.
request_plan closing(request_plan plan) {
  plan.reply.close = true;
  return plan;
}

request_plan start(work kind) {
  request_plan plan;
  plan.kind = kind;
  return plan;
}

/// The answer to a CORS preflight: the methods, and for an allowed origin the headers it
/// may send.
answer preflight(const request_head& head, const std::string& cors_origin) {
  answer reply{204, {}, {}, {{"Allow", "GET, POST, DELETE, OPTIONS"}}};
  if (!cors_origin.empty()) {
    reply.headers.push_back({"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"});
    reply.headers.push_back(
        {"Access-Control-Allow-Headers", head.requested_headers.empty()
                                             ? "Authorization, Content-Type, X-Request-Id"
                                             : std::string(head.requested_headers)});
    reply.headers.push_back({"Access-Control-Max-Age", "600"});
  }
  return reply;
}

/// The route of the head, less what this server does not serve: under --metrics-port only
/// /metrics, under --disable-web-ui no playground, and without --admin-api-key no /admin.
route served_route(const server_context& context, const request_head& head, bool admin) {
  route r = find_route(head.method, head.target);
  if (context.metrics_only && r.target != endpoint::metrics) r = route{};
  if (!context.config.enable_web_ui &&
      (r.target == endpoint::web_page || r.target == endpoint::web_asset))
    r = route{};
  if (is_admin_path(head.target) && !admin) r = route{};
  return r;
}

/// The refusal of a request the checks before the endpoint stop, if any: the key, an unknown
/// path, a wrong method, a body that is not JSON, a POST from a foreign page.
std::optional<answer> check(const server_context& context, const request_head& head, const route& r,
                            bool admin, error_style style) {
  // The key comes before the path, so that a client without it learns nothing of which paths
  // exist. Under /admin only the admin key counts, and it opens nothing else.
  std::string authorization(head.authorization);
  if (authorization.empty() && r.target == endpoint::websocket)
    authorization = websocket_authorization(head.websocket_protocols);
  if (authorization.empty() && !head.api_key.empty() && !admin)
    authorization = "Bearer " + std::string(head.api_key);
  if (admin ? !admin_authorized(context.config, authorization)
            : (r.target == endpoint::unknown || needs_api_key(r.target)) &&
                  !authorized(context.config, authorization)) {
    return error_answer({401,
                         admin ? "invalid or missing admin API key (Authorization: Bearer)"
                               : "invalid or missing API key (Authorization: Bearer, or x-api-key)",
                         "invalid_request_error",
                         {},
                         "invalid_api_key"},
                        style);
  }
  const std::string method(head.method);
  if (r.target == endpoint::unknown)
    return error_answer(not_found("no such endpoint: " + method + " " + std::string(head.target)),
                        style);
  if (!r.method_allowed) {
    answer reply = error_answer({405,
                                 "method " + method + " is not allowed on this path",
                                 "invalid_request_error",
                                 {},
                                 "method_not_allowed"},
                                style);
    reply.headers.push_back({"Allow", r.allow});
    return reply;
  }
  if (head.method != "POST") return std::nullopt;
  // A POST with no body (drain, stop) has nothing to read as JSON, whatever its type. A
  // browser sends text/plain or form data cross-origin without a preflight; refusing them
  // keeps another site's page from starting generations (vLLM's FastAPI does too).
  if (head.has_body && !is_json_content_type(head.content_type)) {
    return error_answer(
        {415,
         head.content_type.empty() ? std::string("a POST needs Content-Type: application/json")
                                   : "Content-Type must be application/json, got '" +
                                         std::string(head.content_type) + "'",
         "invalid_request_error",
         {},
         "unsupported_media_type"},
        style);
  }
  // A page of another site may POST without asking first (a simple request); its Origin
  // says so, as for the WebSocket.
  if (!head.origin.empty() &&
      !origin_allowed(context.config, head.origin, head.host.value_or(""))) {
    return error_answer(
        {403,
         "a POST from origin '" + std::string(head.origin) + "' is refused (see --allowed-origins)",
         "invalid_request_error",
         {},
         "origin_not_allowed"},
        style);
  }
  return std::nullopt;
}

/// The plan for an endpoint whose request passed every check.
request_plan plan_endpoint(const server_context& context, const request_head& head, const route& r,
                           error_style style) {
  engine_port& engine = context.engine;
  switch (r.target) {
    case endpoint::health: {
      // 200 while a replica serves, naming any that does not; 503 when none does.
      const engine_health health = engine.health();
      if (health.ok) return answered({200, health.reason, "text/plain"});
      return refused(engine_error(health.reason, 503), style);
    }
    case endpoint::version:
      return answered({200, version_json()});
    case endpoint::models:
      return answered({200, models_json(engine.models())});
    case endpoint::model: {
      const auto model = r.model_id.empty() ? std::nullopt : engine.find_model(r.model_id);
      if (!model)
        return refused(
            not_found("The model `" + r.model_id + "` does not exist.", "model_not_found"), style);
      return answered({200, model_json(*model, r.model_id)});
    }
    case endpoint::metrics:
      return answered({200, engine.metrics_text(), "text/plain; version=0.0.4; charset=utf-8"});
    case endpoint::engine_stats:
      return answered({200, engine.engine_stats_json()});
    case endpoint::completions:
    case endpoint::chat_completions:
    case endpoint::responses:
    case endpoint::messages: {
      request_plan plan = start(work::completion);
      plan.call_kind = r.target == endpoint::completions ? api_kind::completion
                       : r.target == endpoint::responses ? api_kind::responses
                       : r.target == endpoint::messages  ? api_kind::messages
                                                         : api_kind::chat;
      return plan;
    }
    case endpoint::messages_count_tokens:
      return start(work::count_tokens);
    case endpoint::response:
    case endpoint::response_input_items:
    case endpoint::response_cancel:
      return answered(stored_response_answer(context, r, head.method, head.target));
    case endpoint::embeddings:
      return start(work::embeddings);
    case endpoint::tokenize:
      return start(work::tokenize);
    case endpoint::detokenize:
      return start(work::detokenize);
    case endpoint::load_lora_adapter:
    case endpoint::unload_lora_adapter:
      return start(work::lora_update);
    case endpoint::admin_replicas:
    case endpoint::admin_drain:
    case endpoint::admin_replica:
      if (!context.admin)
        return refused({503,
                        "the admin API is not available on this server",
                        "server_error",
                        {},
                        "admin_unavailable"},
                       style);
      return start(work::admin);
    case endpoint::admin_models:
    case endpoint::admin_model:
      if (!context.models_admin)
        return refused({501,
                        "this server serves one model: /admin/models needs a server started "
                        "with --model NAME=PATH, --models-dir or --model-config",
                        "server_error",
                        {},
                        "models_admin_unavailable"},
                       style);
      return start(work::model_admin);
    case endpoint::websocket:
      if (!head.websocket_upgrade)
        return refused(bad_request("/v1/ws expects a WebSocket upgrade"), style);
      // Browsers let any page open a WebSocket anywhere; only the Origin tells them apart.
      if (!head.origin.empty() &&
          !origin_allowed(context.config, head.origin, head.host.value_or("")))
        return refused({403,
                        "WebSocket from origin '" + std::string(head.origin) +
                            "' refused (see --allowed-origins)",
                        "invalid_request_error",
                        {},
                        "origin_not_allowed"},
                       style);
      return start(work::websocket);
    case endpoint::web_page:
    case endpoint::web_asset:
      return start(work::web_asset);
    case endpoint::unknown:
      break;  // check() has refused it
  }
  return refused(not_found("no such endpoint"), style);
}

/// The plan but for its CORS origin, which is `cors_origin`.
request_plan decide(const server_context& context, const request_head& head,
                    const std::string& cors_origin, error_style style) {
  if (head.http_1_1 && !head.host)
    return closing(refused(bad_request("an HTTP/1.1 request must carry a Host header"), style));
  if (head.host && !host_allowed(context.config, *head.host)) {
    // DNS rebinding: a page whose domain now resolves to this machine names that domain.
    return closing(
        refused({403,
                 "Host '" + std::string(*head.host) + "' is not served here (see --allowed-hosts)",
                 "invalid_request_error",
                 {},
                 "host_not_allowed"},
                style));
  }
  if (head.method == "OPTIONS") return answered(preflight(head, cors_origin));
  // /admin exists only with its own key; without one its paths are unknown like any other.
  const bool admin =
      is_admin_path(head.target) && !context.metrics_only && !context.config.admin_api_key.empty();
  const route r = served_route(context, head, admin);
  request_plan plan;
  if (auto refusal = check(context, head, r, admin, style))
    plan = answered(std::move(*refusal));
  else
    plan = plan_endpoint(context, head, r, style);
  plan.route = r;
  return plan;
}

}  // namespace

error_style error_style_of(std::string_view target) {
  const endpoint e = find_route("POST", target).target;
  return e == endpoint::messages || e == endpoint::messages_count_tokens ? error_style::anthropic
                                                                         : error_style::openai;
}

answer error_answer(const api_error& error, error_style style) {
  if (style == error_style::openai) return {error.status, error_json(error)};
  return {
      anthropic_status(error.status),
      anthropic_error_object(error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

request_plan plan_request(const server_context& context, const request_head& head) {
  const std::string cors_origin = cors_allow_origin(context.config, head.origin);
  const error_style style = error_style_of(head.target);
  request_plan plan = decide(context, head, cors_origin, style);
  plan.cors_origin = cors_origin;
  plan.errors = style;
  return plan;
}

}  // namespace actorllm::api
