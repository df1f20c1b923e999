#pragma once
/// What the server does with a request, decided from its head alone: the checks that keep
/// other sites' pages out, the keys, the route, and either the answer (an error, a small
/// endpoint's body) or the work the transport must start (a call, an upgrade, an admin call).
/// The transport reads the head, calls plan_request, and carries the plan out; it decides
/// nothing itself.
///
///   const api::request_plan plan = api::plan_request(context, head);
///   if (plan.kind == api::work::none) send(plan.reply);  // else start plan.kind
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/openai_protocol.hpp"
#include "api/routes.hpp"
#include "api/server_context.hpp"

namespace actorllm::api {

/// The parts of a request's head that the decision reads. Views into the request: they live
/// as long as it does.
struct request_head {
  std::string_view method;  ///< as sent: "GET", "POST", ...
  std::string_view target;  ///< path and query string
  bool http_1_1 = true;     ///< HTTP/1.1 or later, which must name a Host (1.0 need not)
  std::optional<std::string_view> host;  ///< the Host header; nullopt: none was sent
  std::string_view origin;
  std::string_view authorization;
  std::string_view api_key;              ///< x-api-key: the key as Anthropic's clients send it
  std::string_view websocket_protocols;  ///< Sec-WebSocket-Protocol: the offered subprotocols
  std::string_view content_type;
  std::string_view requested_headers;  ///< Access-Control-Request-Headers (a preflight)
  bool has_body = false;
  bool websocket_upgrade = false;  ///< the head asks for a WebSocket upgrade
};

/// An answer ready to send. The transport adds what every answer carries (Server,
/// X-Request-Id, CORS, Retry-After on a 503, WWW-Authenticate on a 401) and leaves out the
/// body of a HEAD.
struct answer {
  int status = 200;
  std::string body = {};
  std::string content_type = "application/json";                  ///< empty: no Content-Type
  std::vector<std::pair<std::string, std::string>> headers = {};  ///< more (Allow, ...)
  bool close = false;  ///< the connection ends after this answer
};

/// Whose error objects answer a request: OpenAI's {"error": {...}}, or on the Messages API's
/// paths Anthropic's {"type": "error", "error": {...}} (anthropic_protocol.hpp, whose statuses
/// differ in one place: 529 for 503).
enum class error_style : uint8_t { openai, anthropic };

/// The style of the errors of a request for `target` (path and query), found or not.
error_style error_style_of(std::string_view target);

/// An error's answer: its status and body in `style`.
answer error_answer(const api_error& error, error_style style = error_style::openai);

/// What the transport starts for a request that plan_request did not answer itself.
enum class work : uint8_t {
  none,          ///< nothing: `reply` is the whole answer
  completion,    ///< a call of `call_kind` from the body (admit_call)
  embeddings,    ///< admit_embeddings, then run_embeddings
  tokenize,      ///< admit_tokenize, then the engine's tokenize
  count_tokens,  ///< admit_tokenize of a count_tokens body, then the engine's tokenize
  detokenize,    ///< parse_detokenize_request, then the engine's detokenize
  lora_update,   ///< parse_lora_update, then apply_lora_update (load: route.target says)
  admin,         ///< run_admin_call on `route` (the admin port exists)
  model_admin,   ///< run_model_admin_call on `route` (the model admin port exists)
  websocket,     ///< the upgrade, vetted: hand the connection to the WebSocket session
  web_asset,     ///< the playground's file route.asset
};

struct request_plan {
  work kind = work::none;
  answer reply;                               ///< work::none
  api_kind call_kind = api_kind::completion;  ///< work::completion
  api::route route;  ///< the path's endpoint, ids, asset and metrics label (pattern)
  /// Access-Control-Allow-Origin of every answer to this request; empty: none.
  std::string cors_origin;
  /// The style of every error answered to this request, by the plan or by the work it starts.
  error_style errors = error_style::openai;
};

/// Decides what to do with a request, in this order: CORS; Host (400 when HTTP/1.1 sends
/// none, 403 host_not_allowed; both end the connection); an OPTIONS preflight (204); the
/// route, where --metrics-port serves /metrics alone, --disable-web-ui takes the playground
/// away and /admin exists only with --admin-api-key; the key (401; Authorization: Bearer, or
/// x-api-key outside /admin), asked before the path is
/// judged so that a client without it learns nothing of which paths exist; an unknown path
/// (404); a wrong method (405 with Allow); a POST body that is not JSON (415); a POST from a
/// foreign Origin (403 origin_not_allowed); then the endpoint. The small endpoints (health,
/// version, models, model, metrics, engine stats) are answered here from `context.engine`.
request_plan plan_request(const server_context& context, const request_head& head);

}  // namespace actorllm::api
