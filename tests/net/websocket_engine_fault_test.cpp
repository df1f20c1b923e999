// A WebSocket call whose submit throws (an engine fault) is answered with an error and leaves
// nothing behind: its id can be used again, a cancel of it finds nothing, and closing the
// socket afterwards does not touch the call that never started (it did: a null call was kept
// under the id, and the close dereferenced it). Found by fuzz/websocket_fuzz.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "net/http_server.hpp"
#include "testing/fake_engine.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

class websocket_engine_fault : public ::testing::Test {
 protected:
  void SetUp() override {
    server_config config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.io_threads = 1;
    net::http_options options;
    options.access_log = false;
    server_ = std::make_unique<net::http_server>(config, engine_, options);
    server_->start();
  }

  std::unique_ptr<websocket::stream<tcp::socket>> open() {
    auto ws = std::make_unique<websocket::stream<tcp::socket>>(connect(io_, server_->port()));
    ws->handshake("127.0.0.1", "/v1/ws");
    ws->text(true);
    return ws;
  }
  static json exchange(websocket::stream<tcp::socket>& ws, const std::string& text) {
    ws.write(asio::buffer(text));
    beast::flat_buffer buffer;
    ws.read(buffer);
    return json::parse(beast::buffers_to_string(buffer.data()));
  }

  fake_engine engine_;
  std::unique_ptr<net::http_server> server_;
  asio::io_context io_;
};

TEST_F(websocket_engine_fault, a_call_whose_submit_throws_leaves_nothing_behind) {
  {
    auto ws = open();
    json m = exchange(*ws, R"({"id":"d","prompt":"throw"})");
    EXPECT_EQ(m["type"], "error") << m.dump();
    m = exchange(*ws, R"({"type":"cancel","id":"d"})");
    EXPECT_EQ(m["type"], "error") << m.dump();
    EXPECT_EQ(m["id"], "d") << m.dump();
    EXPECT_NE(m["error"]["message"].get<std::string>().find("no running request"),
              std::string::npos)
        << m.dump();
    // The id is free again: a call under it runs to its end.
    ws->write(asio::buffer(std::string(R"({"id":"d","prompt":"x","max_tokens":1})")));
    std::string last;
    while (last != "done" && last != "error") {
      beast::flat_buffer buffer;
      ws->read(buffer);
      last = json::parse(beast::buffers_to_string(buffer.data())).value("type", "");
    }
    EXPECT_EQ(last, "done");
    EXPECT_EQ(exchange(*ws, R"({"id":"e","prompt":"throw"})")["type"], "error");
  }  // the socket closes with the failed call "e" the last one it sent
  // The server survived the close and still answers.
  auto ws = open();
  json m = exchange(*ws, R"({"type":"cancel","id":"nothing"})");
  EXPECT_EQ(m["type"], "error") << m.dump();
}

}  // namespace
}  // namespace actorllm::testing
