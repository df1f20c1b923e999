// WebSocket at /v1/ws against a fake engine: concurrent ids on one connection, cancel,
// errors tagged by id, and aborts when the socket closes.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "net/http_server.hpp"
#include "testing/fake_engine.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

class websocket_test : public ::testing::Test {
 protected:
  void start(server_config config = {}, net::http_options options = {}) {
    config.host = "127.0.0.1";
    config.port = 0;
    config.io_threads = 2;
    options.access_log = false;
    server_ = std::make_unique<net::http_server>(config, engine_, options);
    server_->start();
  }
  void SetUp() override { start(); }

  /// An open WebSocket to /v1/ws.
  std::unique_ptr<websocket::stream<tcp::socket>> open(const header_list& headers = {}) {
    auto ws = std::make_unique<websocket::stream<tcp::socket>>(connect(io_, server_->port()));
    ws->set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
      for (const auto& [name, value] : headers) req.set(name, value);
    }));
    ws->handshake("127.0.0.1", "/v1/ws");
    return ws;
  }

  static void send(websocket::stream<tcp::socket>& ws, const std::string& text) {
    ws.text(true);
    ws.write(asio::buffer(text));
  }
  static json receive(websocket::stream<tcp::socket>& ws) {
    beast::flat_buffer buffer;
    ws.read(buffer);
    return json::parse(beast::buffers_to_string(buffer.data()));
  }

  fake_engine engine_;
  std::unique_ptr<net::http_server> server_;
  asio::io_context io_;
};

TEST_F(websocket_test, two_concurrent_ids_on_one_connection) {
  engine_.token_delay = std::chrono::milliseconds(1);
  auto ws = open();
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":5})");
  send(*ws, R"({"id":"b","messages":[{"role":"user","content":"hi"}],"max_tokens":3,
               "stream_options":{"include_usage":true}})");
  std::map<std::string, std::string> text;
  std::map<std::string, std::vector<json>> chunks;
  std::set<std::string> done;
  while (done.size() < 2) {
    const json m = receive(*ws);
    if (m.contains("type")) {
      ASSERT_EQ(m["type"], "done") << m.dump();
      done.insert(m["id"].get<std::string>());
      continue;
    }
    const std::string id = m["id"];
    chunks[id].push_back(m);
    for (const auto& choice : m["choices"]) {
      text[id] +=
          id == "a" ? choice["text"].get<std::string>() : choice["delta"].value("content", "");
    }
  }
  EXPECT_EQ(text["a"], "w0 w1 w2 w3 w4 ");
  EXPECT_EQ(text["b"], "w0 w1 w2 ");
  EXPECT_EQ(chunks["a"].front()["object"], "text_completion");
  EXPECT_EQ(chunks["b"].front()["object"], "chat.completion.chunk");
  EXPECT_EQ(chunks["b"].front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(chunks["b"].back()["usage"]["completion_tokens"], 3);
  EXPECT_EQ(engine_.submitted().size(), 2u);
  EXPECT_EQ(engine_.num_aborted(), 0u);
}

TEST_F(websocket_test, cancel_aborts_one_request_only) {
  engine_.token_delay = std::chrono::milliseconds(2);
  auto ws = open();
  send(*ws, R"({"id":"long","prompt":"x","max_tokens":100000})");
  json m = receive(*ws);
  EXPECT_EQ(m["id"], "long");
  send(*ws, R"({"type":"cancel","id":"long"})");
  send(*ws, R"({"id":"short","prompt":"y","max_tokens":2})");
  bool cancelled = false, short_done = false;
  while (!cancelled || !short_done) {
    m = receive(*ws);
    if (m.value("type", "") == "cancelled") {
      EXPECT_EQ(m["id"], "long");
      cancelled = true;
    } else if (m.value("type", "") == "done") {
      EXPECT_EQ(m["id"], "short");
      short_done = true;
    } else {
      EXPECT_FALSE(cancelled && m["id"] == "long") << "chunk after the cancel";
    }
  }
  const auto submitted = engine_.submitted();
  ASSERT_EQ(submitted.size(), 2u);
  EXPECT_TRUE(engine_.was_aborted(submitted[0].request_id));
  EXPECT_FALSE(engine_.was_aborted(submitted[1].request_id));
}

TEST_F(websocket_test, errors_are_tagged_by_id) {
  auto ws = open();
  send(*ws, "{oops");
  json m = receive(*ws);
  EXPECT_EQ(m["type"], "error");
  EXPECT_TRUE(m["id"].is_null());
  send(*ws, R"({"prompt":"x"})");
  m = receive(*ws);
  EXPECT_EQ(m["error"]["param"], "id");
  send(*ws, R"({"id":"t","prompt":"x","temperature":-1})");
  m = receive(*ws);
  EXPECT_EQ(m["type"], "error");
  EXPECT_EQ(m["id"], "t");
  EXPECT_EQ(m["error"]["param"], "temperature");
  send(*ws, R"({"id":"big","prompt":"too long"})");
  m = receive(*ws);
  EXPECT_EQ(m["id"], "big");
  EXPECT_NE(m["error"]["message"].get<std::string>().find("4096"), std::string::npos);
  send(*ws, R"({"type":"cancel","id":"nothing"})");
  EXPECT_EQ(receive(*ws)["type"], "error");
  const auto submitted = engine_.submitted().size();
  send(*ws, R"({"type":"cancle","id":"typo","prompt":"x"})");  // not run as a completion
  m = receive(*ws);
  EXPECT_EQ(m["type"], "error");
  EXPECT_EQ(m["error"]["param"], "type");
  EXPECT_EQ(engine_.submitted().size(), submitted);
  // Still serving after all that.
  send(*ws, R"({"id":7,"prompt":"x","max_tokens":1})");
  m = receive(*ws);
  EXPECT_EQ(m["id"], "7");
  EXPECT_EQ(m["choices"][0]["text"], "w0 ");
}

TEST_F(websocket_test, duplicate_running_id_is_refused) {
  engine_.token_delay = std::chrono::milliseconds(5);
  auto ws = open();
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":50})");
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":50})");
  for (;;) {
    const json m = receive(*ws);
    if (m.value("type", "") == "error") {
      EXPECT_EQ(m["error"]["param"], "id");
      break;
    }
  }
}

TEST_F(websocket_test, closing_the_socket_aborts_everything_running) {
  engine_.token_delay = std::chrono::milliseconds(2);
  auto ws = open();
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":100000})");
  send(*ws, R"({"id":"b","prompt":"x","max_tokens":100000})");
  receive(*ws);
  ws->next_layer().close();  // no close frame: the client just vanishes
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (engine_.num_aborted() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(engine_.num_aborted(), 2u);
}

TEST_F(websocket_test, api_key_is_checked_on_the_upgrade) {
  server_.reset();
  server_config config;
  config.api_key = "k";
  start(config);
  EXPECT_THROW(open(), boost::system::system_error);
  auto ws = open({{"Authorization", "Bearer k"}});
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":1})");
  EXPECT_EQ(receive(*ws)["id"], "a");
}

TEST_F(websocket_test, a_browser_may_carry_the_key_as_a_subprotocol) {
  server_.reset();
  server_config config;
  config.api_key = "k";
  start(config);
  EXPECT_THROW(open({{"Sec-WebSocket-Protocol", "actorllm, bearer.wrong"}}),
               boost::system::system_error);
  std::string answered;
  auto ws = std::make_unique<websocket::stream<tcp::socket>>(connect(io_, server_->port()));
  ws->set_option(websocket::stream_base::decorator([](websocket::request_type& req) {
    req.set(http::field::sec_websocket_protocol, "actorllm, bearer.k");
  }));
  websocket::response_type res;
  ws->handshake(res, "127.0.0.1", "/v1/ws");
  EXPECT_EQ(res[http::field::sec_websocket_protocol], "actorllm");
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":1})");
  EXPECT_EQ(receive(*ws)["id"], "a");
}

TEST_F(websocket_test, ids_and_calls_per_connection_are_bounded) {
  engine_.token_delay = std::chrono::milliseconds(20);
  auto ws = open();
  send(*ws, json({{"id", std::string(257, 'i')}, {"prompt", "x"}}).dump());
  json m = receive(*ws);
  EXPECT_EQ(m["type"], "error");
  EXPECT_EQ(m["error"]["param"], "id");
  for (int i = 0; i < 64; ++i)
    send(*ws, json({{"id", std::to_string(i)}, {"prompt", "x"}, {"max_tokens", 1000}}).dump());
  send(*ws, R"({"id":"one-too-many","prompt":"x"})");
  for (int seen = 0; seen < 10000; ++seen) {  // the refusal comes among the running calls' chunks
    m = receive(*ws);
    if (m["id"] == "one-too-many") break;
  }
  EXPECT_EQ(m["type"], "error");
  EXPECT_EQ(m["error"]["code"], "rate_limit_exceeded");  // a 429
  EXPECT_EQ(engine_.submitted().size(), 64u);
}

TEST_F(websocket_test, a_client_that_never_reads_is_cut_off_and_its_calls_aborted) {
  net::http_options options;
  options.max_queued_output_bytes = 64 << 10;
  server_.reset();
  start({}, options);
  asio::io_context io;
  tcp::socket socket(io);
  socket.open(tcp::v4());
  socket.set_option(asio::socket_base::receive_buffer_size(4096));
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
  websocket::stream<tcp::socket> ws(std::move(socket));
  ws.handshake("127.0.0.1", "/v1/ws");
  send(ws, R"({"id":"a","prompt":"x","max_tokens":150000,"logprobs":20})");
  EXPECT_TRUE(engine_.wait_for_abort(std::chrono::seconds(20)));
}

TEST_F(websocket_test, stopping_the_server_ends_each_call_with_an_error) {
  engine_.token_delay = std::chrono::milliseconds(5);
  auto ws = open();
  send(*ws, R"({"id":"a","prompt":"x","max_tokens":100000})");
  EXPECT_EQ(receive(*ws)["id"], "a");  // streaming
  std::thread stopper([this] { server_->stop(); });
  json m;
  for (int seen = 0; seen < 100000; ++seen) {
    m = receive(*ws);
    if (m.value("type", "") == "error") break;
  }
  stopper.join();
  EXPECT_EQ(m["id"], "a");
  EXPECT_NE(m["error"]["message"].get<std::string>().find("shutting down"), std::string::npos);
  EXPECT_TRUE(engine_.was_aborted(engine_.submitted().at(0).request_id));
}

}  // namespace
}  // namespace actorllm::testing
