#pragma once
/// Blocking Beast clients for the server tests: plain HTTP, SSE bodies, raw sockets.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace actorllm::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

struct http_result {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

using header_list = std::vector<std::pair<std::string, std::string>>;

inline http::request<http::string_body> make_request(http::verb method, const std::string& target,
                                                     const std::string& body,
                                                     const header_list& headers) {
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) req.set(name, value);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  return req;
}

inline http_result read_result(tcp::socket& socket, beast::flat_buffer& buffer) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  http::read(socket, buffer, parser);
  http_result out;
  out.status = parser.get().result_int();
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(field.value());
  }
  out.body = parser.get().body();
  return out;
}

inline tcp::socket connect(asio::io_context& io, uint16_t port) {
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  return socket;
}

/// One request on a fresh connection.
inline http_result http_call(uint16_t port, http::verb method, const std::string& target,
                             const std::string& body = {}, const header_list& headers = {}) {
  asio::io_context io;
  tcp::socket socket = connect(io, port);
  http::write(socket, make_request(method, target, body, headers));
  beast::flat_buffer buffer;
  return read_result(socket, buffer);
}

inline http_result post(uint16_t port, const std::string& target, const std::string& body,
                        const header_list& headers = {}) {
  return http_call(port, http::verb::post, target, body, headers);
}

inline http_result get(uint16_t port, const std::string& target, const header_list& headers = {}) {
  return http_call(port, http::verb::get, target, {}, headers);
}

/// The payloads of the `data: ...` events of an SSE body, in order. An event that is not
/// framed exactly as `data: <payload>\n\n` yields "<bad frame>".
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t end = body.find("\n\n", pos);
    if (end == std::string::npos || body.compare(pos, 6, "data: ") != 0) {
      out.push_back("<bad frame>");
      break;
    }
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

}  // namespace actorllm::testing
