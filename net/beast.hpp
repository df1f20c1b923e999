#pragma once
/// Beast and Asio for the server's own translation units; never included by public headers,
/// so that code using the server does not pay Beast's compile time.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <functional>
#include <memory>
#include <string>

#include "api/server_context.hpp"
#include "net/connection_stream.hpp"
#include "net/http_server.hpp"
#include "net/mailbox.hpp"
#include "net/session_registry.hpp"

namespace actorllm::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using http_request = http::request<http::string_body>;

/// What every session shares. Lives as long as the server.
struct server_context {
  api::server_context api;  ///< what the API's decisions read
  http_options options;
  std::shared_ptr<post_gate> gate = std::make_shared<post_gate>();
  std::shared_ptr<session_registry> sessions = std::make_shared<session_registry>();
  /// Runs work that may take long (reading an adapter's files) off the I/O threads, so that
  /// /health and every stream go on meanwhile; null: on the calling thread.
  std::function<void(std::function<void()>)> run_blocking = nullptr;
};

/// Serves HTTP/1.1 on an accepted socket (keep-alive, SSE, upgrade to WebSocket), over TLS
/// with `tls` (null: plain).
void run_http_session(server_context& context, tcp::socket socket, asio::ssl::context* tls);

/// Takes over a stream whose request asked for a WebSocket upgrade on /v1/ws.
void run_websocket_session(server_context& context, connection_stream stream, http_request upgrade,
                           std::string peer);

}  // namespace actorllm::net
