#pragma once
/// The load generator's network side: Asio coroutines on one thread, streamed responses timed
/// with steady_clock as their bytes arrive. Connections are kept alive and reused by later
/// requests, as vLLM's benchmark does (one aiohttp session with a keep-alive pool); without a
/// pool, each request opens its own connection and sends Connection: close.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "bench/serve_bench_stream.hpp"

namespace actorllm::bench::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using clock = std::chrono::steady_clock;

/// Idle kept-alive connections to one server. Single-threaded, like the whole client.
class connection_pool {
 public:
  /// An idle connection, or nullopt. One idle for longer than `max_idle` is dropped: servers
  /// close idle keep-alive connections (uvicorn after 5 s, ours after 60 s).
  std::optional<tcp::socket> take() {
    while (!idle_.empty()) {
      auto [socket, since] = std::move(idle_.back());
      idle_.pop_back();
      if (socket.is_open() && clock::now() - since < max_idle) return std::move(socket);
    }
    return std::nullopt;
  }
  void give_back(tcp::socket socket) { idle_.emplace_back(std::move(socket), clock::now()); }
  /// Connections opened by requests that found no idle one (counted by run_request).
  int num_opened = 0;

 private:
  static constexpr auto max_idle = std::chrono::seconds(4);
  std::vector<std::pair<tcp::socket, clock::time_point>> idle_;
};

/// Where requests go: resolved once, before the clock starts.
struct target {
  std::string host;  // for the Host header
  tcp::resolver::results_type endpoints;
  std::string path;  // /v1/completions or /v1/chat/completions
  std::chrono::seconds timeout{600};
  connection_pool* pool = nullptr;  // none: a connection per request
};

/// One request's socket, shared with the timer that closes it at the deadline.
struct connection {
  explicit connection(tcp::socket s) : socket(std::move(s)) {}
  tcp::socket socket;
  bool timed_out = false;
};

/// Sends `body` to `t` and reads the SSE answer into `r` (whose prompt_len and
/// expected_output_len the caller has set). Never throws: failures end in r.error.
inline asio::awaitable<void> run_request(const target& t, const std::string& body, bool ignore_eos,
                                         request_result& r) {
  const auto start = clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  stream_accumulator acc;
  std::string error_body;  // the answer of a non-200 status
  const auto executor = co_await asio::this_coro::executor;
  std::optional<tcp::socket> idle = t.pool ? t.pool->take() : std::nullopt;
  // A kept-alive connection may have been closed by the server meanwhile: when it fails before
  // any byte of an answer, the request goes once more on a new connection.
  for (bool reused = idle.has_value();; reused = false) {
    // One timer for the whole request: beast::tcp_stream would arm and cancel a timer around
    // every read, and a read per token is this loop's common case. The timer's handler shares
    // the connection, so it is safe even when it runs after this frame.
    const auto conn =
        std::make_shared<connection>(reused ? std::move(*idle) : tcp::socket(executor));
    http::response_parser<http::buffer_body> parser;
    try {
      tcp::socket& stream = conn->socket;
      asio::steady_timer deadline(executor, t.timeout);  // cancelled as it dies
      deadline.async_wait([conn](const beast::error_code& ec) {
        if (ec) return;  // cancelled: the request ended first
        conn->timed_out = true;
        beast::error_code ignored;
        conn->socket.close(ignored);  // fails the pending operation
      });
      if (!reused) {
        if (t.pool) ++t.pool->num_opened;
        co_await asio::async_connect(stream, t.endpoints, asio::use_awaitable);
      }
      http::request<http::string_body> req{http::verb::post, t.path, 11};
      req.set(http::field::host, t.host);
      req.set(http::field::content_type, "application/json");
      req.set(http::field::accept, "text/event-stream");
      req.keep_alive(t.pool != nullptr);
      req.body() = body;
      req.prepare_payload();
      co_await http::async_write(stream, req, asio::use_awaitable);

      beast::flat_buffer buffer;
      parser.body_limit(boost::none);
      co_await http::async_read_header(stream, buffer, parser, asio::use_awaitable);
      const bool ok = parser.get().result() == http::status::ok;
      sse_splitter splitter;
      char bytes[16384];
      while (!parser.is_done()) {
        parser.get().body().data = bytes;
        parser.get().body().size = sizeof bytes;
        beast::error_code ec;
        // read_some returns what has arrived; async_read would wait to fill `bytes`.
        co_await http::async_read_some(stream, buffer, parser,
                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec && ec != http::error::need_buffer) throw beast::system_error(ec);
        const std::string_view got(bytes, sizeof bytes - parser.get().body().size);
        if (!ok) {
          error_body.append(got);
          continue;
        }
        const double now = since_start();  // one arrival time for all events of this read
        splitter.feed(got, [&](std::string_view payload) { acc.on_data(payload, now); });
      }
      if (!ok) {
        r.success = false;
        r.error =
            "HTTP " + std::to_string(parser.get().result_int()) + ": " + error_body.substr(0, 300);
        co_return;
      }
      // Reused only when the answer ended cleanly and nothing follows it on the wire.
      if (t.pool && parser.keep_alive() && buffer.size() == 0)
        t.pool->give_back(std::move(conn->socket));
    } catch (const boost::system::system_error& e) {
      if (reused && !parser.got_some() && !conn->timed_out) continue;  // a stale connection
      acc.finish(r, ignore_eos);
      r.success = false;
      // what() also holds Asio's source location
      r.error = "transport: " + (conn->timed_out ? std::string("timed out") : e.code().message());
      co_return;
    } catch (const std::exception& e) {
      acc.finish(r, ignore_eos);
      r.success = false;
      r.error = std::string("transport: ") + e.what();
      co_return;
    }
    break;
  }
  acc.finish(r, ignore_eos);
}

/// Caps the number of requests in flight (vLLM's --max-concurrency semaphore); 0 = no cap.
/// Single-threaded: all calls come from the io_context's one thread.
class concurrency_gate {
 public:
  explicit concurrency_gate(int limit) : free_(limit), unlimited_(limit <= 0) {}

  /// Waits for a free slot.
  asio::awaitable<void> acquire() {
    if (unlimited_) co_return;
    if (free_ > 0) {
      --free_;
      co_return;
    }
    // A timer that never fires by itself; release() cancels it to hand over its slot.
    asio::steady_timer wake(co_await asio::this_coro::executor, clock::time_point::max());
    waiters_.push_back(&wake);
    beast::error_code ignored;
    co_await wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }

  /// Frees a slot, giving it straight to the longest waiter if any.
  void release() {
    if (unlimited_) return;
    if (waiters_.empty()) {
      ++free_;
      return;
    }
    waiters_.front()->cancel();
    waiters_.pop_front();
  }

 private:
  int free_;
  bool unlimited_;
  std::deque<asio::steady_timer*> waiters_;
};

/// run_request once `gate` gives a slot; the clock starts after the wait, as in vLLM.
/// A plain function rather than a lambda: the coroutine frame must not refer to a temporary
/// closure.
inline asio::awaitable<void> gated_request(const target& t, const std::string& body,
                                           bool ignore_eos, concurrency_gate& gate,
                                           request_result& r) {
  co_await gate.acquire();
  co_await run_request(t, body, ignore_eos, r);
  gate.release();
}

/// Starts request i after gaps[0..i] have passed, each under `gate`, and returns once they are
/// all sent (not answered: the io_context runs until they are).
inline asio::awaitable<void> dispatch(const target& t, const std::vector<std::string>& bodies,
                                      const std::vector<double>& gaps, bool ignore_eos,
                                      concurrency_gate& gate,
                                      std::vector<request_result>& results) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  for (size_t i = 0; i < bodies.size(); ++i) {
    if (gaps[i] > 0) {
      timer.expires_after(
          std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(gaps[i])));
      co_await timer.async_wait(asio::use_awaitable);
    }
    asio::co_spawn(executor, gated_request(t, bodies[i], ignore_eos, gate, results[i]),
                   asio::detached);
  }
}

}  // namespace actorllm::bench::serve
