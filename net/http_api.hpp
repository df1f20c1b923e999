#pragma once
/// The HTTP surface without the sockets: which endpoint a request names, who may call it,
/// CORS, request ids, the bodies of the small endpoints and the access log line.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/admin_port.hpp"
#include "common/engine_port.hpp"
#include "config/engine_config.hpp"
#include "net/mailbox.hpp"
#include "net/openai_call.hpp"
#include "net/openai_protocol.hpp"
#include "net/session_registry.hpp"

namespace actorllm::net {

/// Server behaviour that is not in server_config.
struct http_options {
  int32_t max_waiting_requests = 0;  ///< 0: no limit; else 503 while the engine has this many
  double idle_timeout_s = 60.0;      ///< a keep-alive connection with no request is closed
  bool access_log = true;            ///< one line per request on stderr
  /// Serve /metrics alone (the --metrics-port listener): every other path is a 404, so that a
  /// port opened to scrapers exposes no API.
  bool metrics_only = false;
  /// A write that does not finish in this time (a client that stopped reading) ends the
  /// connection and aborts its request.
  double write_timeout_s = 30.0;
  /// Stream output waiting behind a slow client beyond this many bytes ends the connection
  /// and aborts its request: a client that never reads must not make us buffer forever.
  size_t max_queued_output_bytes = size_t{4} << 20;
  /// How long a stopping server waits for the last words of the answers in flight.
  double stop_grace_s = 2.0;
};

/// What every session shares. Lives as long as the server.
struct server_context {
  engine_port& engine;
  server_config config;
  http_options options;
  admin_port* admin = nullptr;  ///< null: /admin answers 503 (when admin_api_key is set)
  std::shared_ptr<post_gate> gate = std::make_shared<post_gate>();
  std::shared_ptr<session_registry> sessions = std::make_shared<session_registry>();
  /// Runs work that may take long (reading an adapter's files) off the I/O threads, so that
  /// /health and every stream go on meanwhile; null: on the calling thread.
  std::function<void(std::function<void()>)> run_blocking;

  /// The tool-call flags, as the request parser takes them.
  tool_settings tools() const { return {config.enable_auto_tool_choice, config.tool_call_parser}; }
};

enum class endpoint : uint8_t {
  completions,
  chat_completions,
  responses,
  embeddings,  ///< POST /v1/embeddings (--task embed)
  models,
  model,
  tokenize,
  detokenize,
  health,
  version,
  metrics,
  websocket,
  admin_replicas,       ///< GET (list) and POST (add) /admin/replicas
  admin_drain,          ///< POST /admin/replicas/{id}/drain
  admin_replica,        ///< DELETE /admin/replicas/{id} (stop)
  engine_stats,         ///< GET /v1/engine/stats: the live engine view's numbers
  web_page,             ///< GET /: the playground (web/index.html)
  web_asset,            ///< GET /ui/{name}: the playground's other files
  load_lora_adapter,    ///< POST /v1/load_lora_adapter (--enable-lora-runtime-updates)
  unload_lora_adapter,  ///< POST /v1/unload_lora_adapter
  unknown
};

struct route {
  endpoint target = endpoint::unknown;
  bool method_allowed = false;
  const char* allow = "";  ///< the methods the path accepts, for 405's Allow header
  std::string model_id;    ///< GET /v1/models/{id}
  std::string replica_id;  ///< /admin/replicas/{id}..., as written (admin_api.hpp reads it)
  std::string asset;       ///< GET / and /ui/{name}: the file of web/ it names
  /// The path with its id replaced by {id} where it has one ("/admin/replicas/{id}/drain"),
  /// the label of the request metrics; empty: the path itself.
  const char* pattern = "";
};

/// Maps method and target (query string ignored) to an endpoint.
route find_route(std::string_view method, std::string_view target);

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

/// Whether `target` (query string ignored) is /admin or below it, known route or not.
bool is_admin_path(std::string_view target);
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

/// `header` when it is a sane id (printable, at most 128 bytes), else a fresh random one.
std::string request_id_for(std::string_view header);
/// `prefix` followed by 32 random hex digits.
std::string random_id(std::string_view prefix);
int64_t unix_now();

std::string models_json(const model_info& model);
std::string model_json(const model_info& model, std::string_view id);
std::string version_json();
std::string tokenize_json(const tokenize_result& result);
std::string detokenize_json(const detokenize_result& result);

/// At most this many prompts in one completions request (a list of prompts).
inline constexpr int64_t max_prompts_per_request = 1024;
/// At most this many logprob entries (tokens and their alternatives, about 100 bytes of JSON
/// each) in one answer: a bound on the memory and the body one request can make us build.
inline constexpr int64_t max_output_entries = int64_t{1} << 22;

/// Refuses (400) a request that is too large to answer or that can never be admitted: too many
/// prompts, more sequences than the waiting queue holds, or logprobs over max_output_entries
/// (tokens counted as max_tokens, or max_model_len where it is unset).
std::optional<api_error> check_request_size(const openai_request& request, int32_t max_model_len,
                                            int32_t max_waiting_requests);

/// Checks a parsed call before it reaches the engine: unknown model (404), engine not
/// alive (503), waiting queue full (503). Fills `model` with what the engine serves.
std::optional<api_error> admit(server_context& context, const openai_request& request,
                               model_info& model);

/// Submits every prompt of `request` to the engine with fresh engine ids and returns the
/// call that assembles their deltas. `display_id` is the "id" of the objects sent back
/// (empty: a fresh cmpl-/chatcmpl- id); `sink` receives every delta, from any thread.
/// `error_chunk`: see call_options.
std::unique_ptr<openai_call> start_call(server_context& context, openai_request request,
                                        const model_info& model, std::string display_id,
                                        std::function<void(request_output)> sink,
                                        bool error_chunk = true);

/// Aborts the engine requests of a call that has not finished.
void abort_call(server_context& context, const openai_call& call);

/// One compact access-log line on stderr (one write, so lines from threads do not mix).
void log_access(std::string_view peer, std::string_view method, std::string_view target, int status,
                double millis, std::string_view request_id);

}  // namespace actorllm::net
