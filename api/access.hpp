#pragma once
/// Who may call what: the API key and the admin key, the WebSocket's key in a subprotocol,
/// CORS, and the checks that keep other sites' pages out (Host, Origin, JSON bodies only).
#include <string>
#include <string_view>

#include "api/routes.hpp"
#include "config/engine_config.hpp"

namespace actorllm::api {

/// Whether the path needs the API key: the OpenAI API and tokenizer endpoints do; /health,
/// /version and /metrics stay open for probes and scrapers, and the playground's files for
/// browsers (the page asks for the key, and every call it makes carries it). The /admin paths take
/// the admin key instead (is_admin_path, admin_authorized).
bool needs_api_key(endpoint target);
/// True when no key is configured or `authorization` is "Bearer <key>" (constant time).
bool authorized(const server_config& config, std::string_view authorization);

/// A browser cannot put an Authorization header on a WebSocket upgrade, so /v1/ws also takes
/// the key as one of the offered subprotocols: `Sec-WebSocket-Protocol: actorllm,
/// bearer.<key>` reads as "Bearer <key>" (empty when no such entry). The server then answers
/// with the protocol "actorllm", which the client must offer too.
std::string websocket_authorization(std::string_view offered_protocols);
/// Whether "actorllm" is among the offered subprotocols.
bool offers_actorllm_protocol(std::string_view offered_protocols);

/// True when an admin key is configured and `authorization` is "Bearer <admin_api_key>"
/// (constant time). The ordinary API key grants nothing here.
bool admin_authorized(const server_config& config, std::string_view authorization);

/// Access-Control-Allow-Origin for `origin`, or empty when CORS does not allow it.
std::string cors_allow_origin(const server_config& config, std::string_view origin);

/// Whether a page of `origin` may open a WebSocket or POST: an origin --allowed-origins names
/// (or "*"), or the server's own (the origin whose host is the request's Host header, which
/// host_allowed has vetted).
bool origin_allowed(const server_config& config, std::string_view origin, std::string_view host);

/// Whether a request's Host header names this server, against DNS rebinding (a page whose
/// domain an attacker points at 127.0.0.1 sends its own name as Host): an IP literal (v4, or
/// v6 in brackets; no name was resolved to reach us), localhost or a name under .localhost,
/// or a name --allowed-hosts lists (case-insensitive; "*": any). A port, a trailing dot and
/// letter case are ignored.
bool host_allowed(const server_config& config, std::string_view host);

/// Whether a POST body may be read as JSON: application/json or a +json type, with any
/// parameters. A missing Content-Type is refused too: a page of any site may POST a body of no
/// type (fetch with a Blob) without asking the server first. (A POST without a body is not
/// asked: there is nothing to read.)
bool is_json_content_type(std::string_view content_type);

}  // namespace actorllm::api
