#pragma once
/// The OpenAI-compatible HTTP / SSE / WebSocket server. Owns its I/O threads; talks to the
/// engine only through engine_port. Include this, not Beast: the Beast code is private.
///
///   actorllm::net::http_server server(config.server, engine, {.max_waiting_requests = 4096},
///                                     &admin);  // /admin, when config.admin_api_key is set
///   server.start();   // returns at once; serving on server.port()
///   server.wait();    // until stop() is called (from a signal handler thread, say)
///   server.stop();    // or let the destructor do it
#include <cstdint>
#include <memory>
#include <string>

#include "api/response_store.hpp"
#include "common/admin_port.hpp"
#include "common/engine_port.hpp"
#include "common/model_admin_port.hpp"
#include "config/engine_config.hpp"

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
  /// The Responses API's stored responses (a folder attached or not); null: a store in
  /// memory with the bounds of server_config (none under metrics_only).
  std::shared_ptr<api::response_store> responses = nullptr;
  /// The models' door for /admin/models (a server of several models); it must outlive the
  /// server. Null: /admin/models answers 501 where config.admin_api_key is set.
  model_admin_port* models_admin = nullptr;
};

class http_server {
 public:
  /// Binds host:port (port 0: a free port) with a listen backlog of the system's maximum,
  /// so a burst of hundreds of connections is accepted at once. Throws std::system_error
  /// when the address cannot be bound. `engine` must outlive the server; so must `admin`, the
  /// engine's door for /admin (null: /admin answers 503 where config.admin_api_key is set).
  http_server(const server_config& config, engine_port& engine, http_options options = {},
              admin_port* admin = nullptr);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Starts accepting on config.io_threads threads (at least one). Returns at once.
  void start();
  /// Blocks until stop() has been called.
  void wait();
  /// Stops accepting, drops the connections and joins the I/O threads. Idempotent,
  /// thread-safe, but not to be called from a handler on the server's own threads.
  /// Engine callbacks that arrive afterwards are ignored.
  void stop();

  /// The bound port (the chosen one when config.port was 0).
  uint16_t port() const;
  /// "http://host:port".
  std::string url() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace actorllm::net
