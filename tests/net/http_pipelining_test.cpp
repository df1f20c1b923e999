// What a client may send while its answer is being made: a pipelined request, a stray CRLF,
// a half-close. Each must leave the answer whole (the stream ends with [DONE]); pipelined
// requests are answered in order; a client that really leaves is still aborted.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;
using http_pipelining_test = server_fixture;

std::string wire(const http::request<http::string_body>& request) {
  std::ostringstream out;
  out << request;
  return out.str();
}

std::string completion(int max_tokens, bool stream) {
  return wire(make_request(http::verb::post, "/v1/completions",
                           R"({"prompt":"x","max_tokens":)" + std::to_string(max_tokens) +
                               R"(,"stream":)" + (stream ? "true" : "false") + "}",
                           {}));
}

/// Reads the socket until the peer closes or `until` appears; returns what was read.
std::string read_until(tcp::socket& socket, const std::string& until) {
  std::string seen;
  char data[4096];
  boost::system::error_code ec;
  while (seen.find(until) == std::string::npos) {
    const std::size_t n = socket.read_some(asio::buffer(data), ec);
    if (ec) break;
    seen.append(data, n);
  }
  return seen;
}

TEST_F(http_pipelining_test, requests_sent_in_one_write_are_answered_in_order) {
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  asio::write(socket, asio::buffer(completion(2, false) + completion(3, true) +
                                   wire(make_request(http::verb::get, "/health", {}, {})) +
                                   completion(1, false)));
  beast::flat_buffer buffer;
  auto first = read_result(socket, buffer);
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(json::parse(first.body)["choices"][0]["text"], "w0 w1 ");
  auto second = read_result(socket, buffer);
  ASSERT_EQ(second.status, 200);
  EXPECT_EQ(sse_payloads(second.body).back(), "[DONE]");
  EXPECT_EQ(read_result(socket, buffer).status, 200);
  auto fourth = read_result(socket, buffer);
  ASSERT_EQ(fourth.status, 200);
  EXPECT_EQ(json::parse(fourth.body)["choices"][0]["text"], "w0 ");
  EXPECT_EQ(engine_.num_aborted(), 0u);
}

TEST_F(http_pipelining_test, a_request_pipelined_during_a_stream_waits_for_it_to_end) {
  engine_.token_delay = std::chrono::milliseconds(2);
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  asio::write(socket, asio::buffer(completion(20, true)));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // mid-stream
  asio::write(socket, asio::buffer(completion(2, false)));
  beast::flat_buffer buffer;
  auto stream = read_result(socket, buffer);
  ASSERT_EQ(stream.status, 200);
  const auto payloads = sse_payloads(stream.body);
  EXPECT_EQ(payloads.back(), "[DONE]");
  auto next = read_result(socket, buffer);
  ASSERT_EQ(next.status, 200);
  EXPECT_EQ(json::parse(next.body)["choices"][0]["text"], "w0 w1 ");
  EXPECT_EQ(engine_.num_aborted(), 0u);
}

TEST_F(http_pipelining_test, a_stray_crlf_during_a_completion_leaves_the_answer_whole) {
  engine_.token_delay = std::chrono::milliseconds(2);
  for (bool stream : {true, false}) {
    asio::io_context io;
    tcp::socket socket = connect(io, port_);
    asio::write(socket, asio::buffer(completion(20, stream)));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    asio::write(socket, asio::buffer(std::string("\r\n")));
    beast::flat_buffer buffer;
    auto answer = read_result(socket, buffer);
    ASSERT_EQ(answer.status, 200) << "stream " << stream;
    if (stream) {
      EXPECT_EQ(sse_payloads(answer.body).back(), "[DONE]");
    } else {
      EXPECT_EQ(json::parse(answer.body)["usage"]["completion_tokens"], 20);
    }
  }
  EXPECT_EQ(engine_.num_aborted(), 0u);
}

TEST_F(http_pipelining_test, a_half_closed_client_still_gets_its_stream) {
  engine_.token_delay = std::chrono::milliseconds(2);
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  asio::write(socket, asio::buffer(completion(20, true)));
  socket.shutdown(tcp::socket::shutdown_send);  // "no more requests", still reading
  const std::string seen = read_until(socket, "data: [DONE]\n\n0\r\n\r\n");
  EXPECT_NE(seen.find("data: [DONE]"), std::string::npos) << seen;
  EXPECT_EQ(engine_.num_aborted(), 0u);
}

TEST_F(http_pipelining_test, a_client_that_leaves_after_half_closing_is_aborted) {
  engine_.token_delay = std::chrono::milliseconds(5);
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  asio::write(socket, asio::buffer(completion(100000, true)));
  socket.shutdown(tcp::socket::shutdown_send);
  read_until(socket, "data: ");
  socket.close();
  ASSERT_TRUE(engine_.wait_for_abort(std::chrono::seconds(2)));
}

// An embeddings request ends with its client too: every input's blocks come back.
TEST_F(http_pipelining_test, embeddings_whose_client_leaves_are_aborted) {
  engine_.embeddings = true;
  engine_.token_delay = std::chrono::milliseconds(20);  // each input answers after a second
  for (const bool half_close : {true, false}) {
    asio::io_context io;
    tcp::socket socket = connect(io, port_);
    asio::write(socket, asio::buffer(wire(make_request(http::verb::post, "/v1/embeddings",
                                                       R"({"input":["a","b","c"]})", {}))));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // submitted by now
    if (half_close)
      socket.shutdown(tcp::socket::shutdown_send);
    else
      socket.close();
    ASSERT_TRUE(engine_.wait_for_abort(std::chrono::seconds(2))) << half_close;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (engine_.num_aborted() < (half_close ? 3u : 6u) &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(engine_.num_aborted(), half_close ? 3u : 6u) << "each input of the request";
  }
}

}  // namespace
}  // namespace actorllm::testing
