// The blocking client: Asio's asynchronous operations run to the end on a private io_context,
// so that one deadline (beast::tcp_stream's) bounds the connect, the write and the read.
#include "net/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

namespace actorllm::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// The most of an answer read: an admin answer is small; this only bounds a wrong server.
constexpr uint64_t max_reply_bytes = uint64_t{64} << 20;

std::string describe(const char* step, const http_url& url, const beast::error_code& ec) {
  const std::string where = url.host + ":" + url.port;
  if (ec == beast::error::timeout) return std::string(step) + " " + where + ": timed out";
  if (ec == asio::error::connection_refused)
    return "cannot connect to " + where + ": connection refused (is the server running?)";
  return std::string(step) + " " + where + ": " + ec.message();
}

}  // namespace

std::optional<http_url> parse_http_url(std::string_view text, std::string& error) {
  constexpr std::string_view scheme = "http://";
  if (!text.starts_with(scheme)) {
    error = "the URL must start with http:// (got '" + std::string(text) + "')";
    return std::nullopt;
  }
  std::string_view rest = text.substr(scheme.size());
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view prefix = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (prefix.ends_with('/')) prefix.remove_suffix(1);

  http_url url;
  url.prefix = std::string(prefix);
  // [v6 address]:port, or host:port
  const auto close = authority.starts_with('[') ? authority.find(']') : 0;
  if (close == std::string_view::npos) {
    error = "unclosed '[' in the URL '" + std::string(text) + "'";
    return std::nullopt;
  }
  const auto colon = authority.find(':', close);
  std::string_view host = authority.substr(0, colon);
  if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
  if (colon != std::string_view::npos) url.port = std::string(authority.substr(colon + 1));
  url.host = std::string(host);
  const bool port_ok = !url.port.empty() && url.port.size() <= 5 &&
                       url.port.find_first_not_of("0123456789") == std::string::npos &&
                       std::stoi(url.port) <= 65535;
  if (url.host.empty() || !port_ok) {
    error = "the URL must be http://HOST[:PORT] (got '" + std::string(text) + "')";
    return std::nullopt;
  }
  return url;
}

http_reply http_fetch(const http_url& url, std::string_view method, std::string_view path,
                      std::string_view body, std::string_view bearer, double timeout_s) {
  http_reply reply;
  asio::io_context io;
  beast::error_code ec;
  const auto endpoints = tcp::resolver(io).resolve(url.host, url.port, ec);
  if (ec) {
    reply.error = describe("cannot resolve", url, ec);
    return reply;
  }

  http::request<http::string_body> request{http::string_to_verb(method),
                                           url.prefix + std::string(path), 11};
  request.set(http::field::host, url.host);
  request.set(http::field::user_agent, "actorllm");
  if (!bearer.empty()) request.set(http::field::authorization, "Bearer " + std::string(bearer));
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = std::string(body);
  }
  request.prepare_payload();

  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_reply_bytes);
  // The deadline holds for every operation that follows: the whole exchange.
  stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0)));
  const char* step = "cannot connect to";
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
    if ((ec = e)) return;
    step = "cannot send to";
    http::async_write(stream, request, [&](beast::error_code e, std::size_t) {
      if ((ec = e)) return;
      step = "no answer from";
      http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
    });
  });
  io.run();
  if (ec) {
    reply.error = describe(step, url, ec);
    return reply;
  }
  reply.status = parser.get().result_int();
  reply.body = std::move(parser.get().body());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return reply;
}

}  // namespace actorllm::net
