#pragma once
/// Beast and Asio for the server's own translation units; never included by public headers,
/// so that code using the server does not pay Beast's compile time.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "net/http_api.hpp"

namespace actorllm::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using http_request = http::request<http::string_body>;

/// Serves HTTP/1.1 on an accepted socket (keep-alive, SSE, upgrade to WebSocket).
void run_http_session(server_context& context, tcp::socket socket);

/// Takes over a stream whose request asked for a WebSocket upgrade on /v1/ws.
void run_websocket_session(server_context& context, beast::tcp_stream stream, http_request upgrade,
                           std::string peer);

}  // namespace actorllm::net
