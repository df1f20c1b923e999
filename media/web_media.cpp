// http(s) image URLs: one GET per hop on a private io_context whose operations share one
// deadline, each hop's URL checked against the policy first.
#include "media/web_media.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "media/web_url.hpp"

namespace actorllm::media {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;
using media_parser = http::response_parser<http::vector_body<uint8_t>>;

/// What one GET got: the parsed answer, or why there is none.
struct web_reply {
  std::unique_ptr<media_parser> parser = std::make_unique<media_parser>();
  std::string error;
};

std::string seconds_of(std::chrono::milliseconds timeout) {
  std::string s = std::to_string(timeout.count() / 1000.0);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s + " s";
}

/// Resolves on a thread of its own: getaddrinfo cannot be cancelled, so a resolver that hangs
/// is left to end by the system's own timeout instead of holding the fetch past `deadline`.
std::optional<tcp::resolver::results_type> resolve_by(const web_url& url,
                                                      steady::time_point deadline,
                                                      std::string& error) {
  struct resolution {
    std::mutex mutex;
    std::condition_variable done_signal;
    bool done = false;
    tcp::resolver::results_type results;
    beast::error_code ec;
  };
  auto shared = std::make_shared<resolution>();
  std::thread([shared, host = url.host, port = url.port] {
    asio::io_context io;
    beast::error_code ec;
    auto results = tcp::resolver(io).resolve(host, port, ec);
    std::lock_guard lock(shared->mutex);
    shared->results = std::move(results);
    shared->ec = ec;
    shared->done = true;
    shared->done_signal.notify_all();
  }).detach();
  std::unique_lock lock(shared->mutex);
  if (!shared->done_signal.wait_until(lock, deadline, [&] { return shared->done; })) {
    error = "timed out resolving " + url.host;
    return std::nullopt;
  }
  if (shared->ec) {
    error = "cannot resolve " + url.host + ": " + shared->ec.message();
    return std::nullopt;
  }
  return shared->results;
}

http::request<http::empty_body> get_request(const web_url& url) {
  http::request<http::empty_body> request{http::verb::get, url.target, 11};
  const bool default_port = url.port == (url.tls ? "443" : "80");
  const bool ipv6 = url.host.find(':') != std::string::npos;
  request.set(http::field::host,
              (ipv6 ? "[" + url.host + "]" : url.host) + (default_port ? "" : ":" + url.port));
  request.set(http::field::user_agent, "actorllm");
  request.set(http::field::accept, "image/*, */*;q=0.8");
  request.set(http::field::connection, "close");
  return request;
}

/// What a failed step means to the client.
std::string describe(const char* step, const beast::error_code& ec, const media_policy& policy) {
  if (ec == beast::error::timeout) return "timed out after " + seconds_of(policy.timeout);
  if (ec == http::error::body_limit)
    return "the image is larger than --max-image-bytes (" + std::to_string(policy.max_bytes) + ")";
  return std::string(step) + ": " + ec.message();
}

/// Connects, (shakes hands,) sends and reads on `stream`, whose lowest layer is a tcp_stream
/// that expires at `deadline`.
template <class stream_type, class shake_hands>
void exchange(asio::io_context& io, stream_type& stream,
              const tcp::resolver::results_type& endpoints, const web_url& url,
              const media_policy& policy, shake_hands handshake, web_reply& reply) {
  auto request = get_request(url);
  beast::flat_buffer buffer;
  reply.parser->body_limit(policy.max_bytes);
  reply.parser->header_limit(64 * 1024);
  beast::error_code ec;
  const char* step = "cannot connect";
  auto read = [&] {
    step = "cannot send the request";
    http::async_write(stream, request, [&](beast::error_code e, std::size_t) {
      if ((ec = e)) return;
      step = "no answer";
      http::async_read(stream, buffer, *reply.parser,
                       [&](beast::error_code e, std::size_t) { ec = e; });
    });
  };
  beast::get_lowest_layer(stream).async_connect(endpoints,
                                                [&](beast::error_code e, const tcp::endpoint&) {
                                                  if ((ec = e)) return;
                                                  step = "the TLS handshake failed";
                                                  handshake([&](beast::error_code e) {
                                                    if ((ec = e)) return;
                                                    read();
                                                  });
                                                });
  io.run();
  // A TLS server that closes without close_notify after a complete answer did no harm.
  if (ec == ssl::error::stream_truncated && reply.parser->is_done()) ec = {};
  if (ec) reply.error = describe(step, ec, policy);
}

web_reply get_once(const web_url& url, const media_policy& policy, steady::time_point deadline) {
  web_reply reply;
  auto endpoints = resolve_by(url, deadline, reply.error);
  if (!endpoints) return reply;
  asio::io_context io;
  if (!url.tls) {
    beast::tcp_stream stream(io);
    stream.expires_at(deadline);
    exchange(
        io, stream, *endpoints, url, policy, [](auto done) { done({}); }, reply);
    return reply;
  }
  ssl::context context(ssl::context::tls_client);
  beast::error_code ec;
  context.set_default_verify_paths(ec);
  if (ec) {
    reply.error = "the system's certificate authorities cannot be read: " + ec.message();
    return reply;
  }
  context.set_verify_mode(ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  beast::error_code not_ip;
  asio::ip::make_address(url.host, not_ip);
  if (not_ip) SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str());  // SNI
  stream.set_verify_callback(ssl::host_name_verification(url.host));
  beast::get_lowest_layer(stream).expires_at(deadline);
  exchange(
      io, stream, *endpoints, url, policy,
      [&stream](auto done) { stream.async_handshake(ssl::stream_base::client, done); }, reply);
  return reply;
}

bool domain_allowed(const web_url& url, const media_policy& policy) {
  return policy.allowed_domains.empty() ||
         std::find(policy.allowed_domains.begin(), policy.allowed_domains.end(), url.host) !=
             policy.allowed_domains.end();
}

}  // namespace

fetched_media fetch_web_media(std::string_view text, const media_policy& policy,
                              steady::time_point deadline) {
  std::string error;
  auto url = parse_web_url(text, error);
  if (!url) return media_error(text, error);
  for (int hop = 0;; ++hop) {
    const std::string where = hop == 0 ? "" : " (redirected to " + url->text() + ")";
    if (!domain_allowed(*url, policy))
      return media_error(text,
                         "the host '" + url->host + "' is not in --allowed-media-domains" + where);
    web_reply reply = get_once(*url, policy, deadline);
    if (!reply.error.empty()) return media_error(text, reply.error + where);
    auto& answer = reply.parser->get();
    const unsigned status = answer.result_int();
    if (status == 301 || status == 302 || status == 303 || status == 307 || status == 308) {
      if (hop >= policy.max_redirects)
        return media_error(
            text, "more than " + std::to_string(policy.max_redirects) + " redirects" + where);
      const auto location = answer[http::field::location];
      auto next = resolve_location(*url, std::string(location.data(), location.size()), error);
      if (!next) return media_error(text, error + where);
      url = std::move(next);
      continue;
    }
    if (status < 200 || status > 299)
      return media_error(text, "the server answered " + std::to_string(status) + " " +
                                   std::string(answer.reason().data(), answer.reason().size()) +
                                   where);
    fetched_media out;
    out.bytes = std::move(answer.body());
    const auto type = answer[http::field::content_type];
    out.content_type = std::string(type.data(), type.size());
    if (out.bytes.empty()) return media_error(text, "the server sent no bytes" + where);
    return out;
  }
}

}  // namespace actorllm::media
