// How answers end when the server stops or the client stops reading: a stream in flight at
// shutdown ends with an error event and [DONE] (not cut mid-body), a waiting non-streamed
// answer becomes a 503, and a client that never reads is cut off (queued output capped,
// writes with a deadline) with its request aborted.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;
using http_shutdown_test = server_fixture;

void send_completion(tcp::socket& socket, const std::string& body) {
  http::write(socket, make_request(http::verb::post, "/v1/completions", body, {}));
}

/// Reads until the server closes the connection (or `deadline`); returns everything read.
std::string read_to_end(tcp::socket& socket, std::string seen = {},
                        std::chrono::seconds deadline = std::chrono::seconds(10)) {
  socket.non_blocking(true);  // polled, so that the deadline holds however the server fails
  const auto until = std::chrono::steady_clock::now() + deadline;
  char data[4096];
  boost::system::error_code ec;
  while (std::chrono::steady_clock::now() < until) {
    const std::size_t n = socket.read_some(asio::buffer(data), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (ec) break;
    seen.append(data, n);
  }
  return seen;
}

TEST_F(http_shutdown_test, a_stream_in_flight_ends_with_an_error_event_and_done) {
  engine_.token_delay = std::chrono::milliseconds(5);
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  send_completion(socket, R"({"prompt":"x","max_tokens":100000,"stream":true})");
  std::string seen;
  char data[4096];
  while (seen.find("data: ") == std::string::npos)
    seen.append(data, socket.read_some(asio::buffer(data)));
  auto stopping = std::async(std::launch::async, [this] { server_->stop(); });
  const std::string answer = read_to_end(socket, seen);
  stopping.get();
  const std::string body = answer.substr(answer.find("\r\n\r\n") + 4);
  EXPECT_TRUE(body.ends_with("0\r\n\r\n")) << "the chunked body was cut: ..."
                                          << body.substr(body.size() > 200 ? body.size() - 200 : 0);
  EXPECT_NE(answer.find("the server is shutting down"), std::string::npos);
  EXPECT_NE(answer.find("data: [DONE]"), std::string::npos);
  EXPECT_TRUE(engine_.wait_for_abort(std::chrono::seconds(2)));
}

TEST_F(http_shutdown_test, a_waiting_non_streamed_answer_becomes_a_503) {
  engine_.token_delay = std::chrono::milliseconds(5);
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  send_completion(socket, R"({"prompt":"x","max_tokens":100000})");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto stopping = std::async(std::launch::async, [this] { server_->stop(); });
  const std::string answer = read_to_end(socket);
  stopping.get();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 503")) << answer;
  EXPECT_NE(answer.find("the server is shutting down"), std::string::npos) << answer;
}

TEST_F(http_shutdown_test, an_idle_keep_alive_connection_does_not_hold_the_shutdown) {
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  http::write(socket, make_request(http::verb::get, "/health", {}, {}));
  beast::flat_buffer buffer;
  EXPECT_EQ(read_result(socket, buffer).status, 200);
  const auto t0 = std::chrono::steady_clock::now();
  server_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(read_to_end(socket, {}, std::chrono::seconds(2)), "");  // closed, nothing sent
}

/// A client that asks for a long, wide stream and never reads it.
tcp::socket start_unread_stream(asio::io_context& io, uint16_t port) {
  tcp::socket socket(io);
  socket.open(tcp::v4());
  socket.set_option(asio::socket_base::receive_buffer_size(4096));
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  send_completion(socket,
                  R"({"prompt":"x","max_tokens":150000,"logprobs":20,"stream":true})");
  return socket;
}

TEST_F(http_shutdown_test, a_client_that_never_reads_is_cut_off_at_the_output_cap) {
  net::http_options options;
  options.max_queued_output_bytes = 64 << 10;
  options.write_timeout_s = 3600;  // the cap alone must end it
  start({}, options);
  asio::io_context io;
  tcp::socket socket = start_unread_stream(io, port_);
  EXPECT_TRUE(engine_.wait_for_abort(std::chrono::seconds(20)));
}

TEST_F(http_shutdown_test, a_write_that_never_finishes_times_out) {
  net::http_options options;
  options.max_queued_output_bytes = size_t{1} << 40;  // the deadline alone must end it
  options.write_timeout_s = 0.5;
  start({}, options);
  engine_.token_delay = std::chrono::milliseconds(1);  // slower than the socket fills
  asio::io_context io;
  tcp::socket socket = start_unread_stream(io, port_);
  EXPECT_TRUE(engine_.wait_for_abort(std::chrono::seconds(30)));
}

}  // namespace
}  // namespace actorllm::testing
