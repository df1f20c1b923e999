#pragma once
/// One accepted connection's byte stream: plain TCP, or TLS over it (--ssl-certfile). Beast's
/// HTTP and WebSocket algorithms take it as any stream (async_read_some, async_write_some),
/// so one session serves both; the timeouts and the socket are the TCP layer's (tcp()).
/// Beast's own translation units only (net/beast.hpp).
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <memory>
#include <optional>
#include <utility>

namespace actorllm::net {

class connection_stream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;
  using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

  explicit connection_stream(boost::beast::tcp_stream plain) : plain_(std::move(plain)) {}
  /// TLS over `plain`, its handshake still to come (async_handshake).
  connection_stream(boost::beast::tcp_stream plain, boost::asio::ssl::context& tls)
      : tls_(std::make_unique<tls_stream>(std::move(plain), tls)) {}

  bool is_tls() const { return tls_ != nullptr; }
  boost::beast::tcp_stream& tcp() { return tls_ ? boost::beast::get_lowest_layer(*tls_) : *plain_; }
  executor_type get_executor() { return tcp().get_executor(); }

  /// The server's side of the TLS handshake; a plain stream completes at once.
  template <class Handler>
  void async_handshake(Handler&& handler) {
    if (tls_)
      tls_->async_handshake(boost::asio::ssl::stream_base::server, std::forward<Handler>(handler));
    else
      boost::asio::post(get_executor(), [h = std::forward<Handler>(handler)]() mutable {
        h(boost::beast::error_code{});
      });
  }

  template <class Buffers, class Handler>
  auto async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Handler>(handler));
    return plain_->async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <class Buffers, class Handler>
  auto async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) return tls_->async_write_some(buffers, std::forward<Handler>(handler));
    return plain_->async_write_some(buffers, std::forward<Handler>(handler));
  }

  // Closing the stream closes its socket (the WebSocket's timeouts do; found by Beast through
  // argument-dependent lookup).
  friend void beast_close_socket(connection_stream& s) { boost::beast::close_socket(s.tcp()); }

  // The WebSocket's closing handshake ends the layer below it (found by the WebSocket stream
  // through argument-dependent lookup).
  friend void teardown(boost::beast::role_type role, connection_stream& s,
                       boost::beast::error_code& ec) {
    using boost::beast::websocket::teardown;
    if (s.tls_)
      teardown(role, *s.tls_, ec);
    else
      teardown(role, *s.plain_, ec);
  }
  template <class Handler>
  friend void async_teardown(boost::beast::role_type role, connection_stream& s,
                             Handler&& handler) {
    using boost::beast::websocket::async_teardown;
    if (s.tls_)
      async_teardown(role, *s.tls_, std::forward<Handler>(handler));
    else
      async_teardown(role, *s.plain_, std::forward<Handler>(handler));
  }

 private:
  std::optional<boost::beast::tcp_stream> plain_;
  std::unique_ptr<tls_stream> tls_;
};

}  // namespace actorllm::net
