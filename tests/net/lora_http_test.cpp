// The HTTP side of multi-LoRA against a fake engine: /v1/models lists adapters with the model
// as parent, a completion naming an adapter reaches the engine under the adapter's name, and
// POST /v1/load_lora_adapter and /v1/unload_lora_adapter answer as vLLM's do (text on
// success, a JSON error naming lora_name or lora_path otherwise, 404 while updates are off).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

using lora_http_test = server_fixture;

TEST_F(lora_http_test, updates_are_refused_while_off) {
  const auto r = post(port_, "/v1/load_lora_adapter", R"({"lora_name":"a","lora_path":"/x"})");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(json::parse(r.body)["error"]["message"].get<std::string>().find(
                "--enable-lora-runtime-updates"),
            std::string::npos);
  EXPECT_EQ(post(port_, "/v1/unload_lora_adapter", R"({"lora_name":"a"})").status, 404);
  EXPECT_EQ(get(port_, "/v1/load_lora_adapter").status, 405);
}

TEST_F(lora_http_test, loaded_adapters_are_listed_served_and_unloaded) {
  engine_.lora_updates = true;
  const auto loaded =
      post(port_, "/v1/load_lora_adapter", R"({"lora_name":"sql","lora_path":"/adapters/sql"})");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded.body, "Success: LoRA adapter 'sql' added successfully.");

  const auto models = json::parse(get(port_, "/v1/models").body);
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][1]["id"], "sql");
  EXPECT_EQ(models["data"][1]["parent"], "fake-model");
  EXPECT_EQ(models["data"][1]["root"], "/adapters/sql");
  EXPECT_TRUE(models["data"][0]["parent"].is_null());
  const auto card = get(port_, "/v1/models/sql");
  ASSERT_EQ(card.status, 200);
  EXPECT_EQ(json::parse(card.body)["parent"], "fake-model");

  const auto r = post(port_, "/v1/completions", R"({"model":"sql","prompt":"hi","max_tokens":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "sql");
  ASSERT_EQ(engine_.submitted().size(), 1u);
  EXPECT_EQ(engine_.submitted()[0].model, "sql");  // the engine picks the adapter by it

  const auto again =
      post(port_, "/v1/load_lora_adapter", R"({"lora_name":"sql","lora_path":"/adapters/sql"})");
  EXPECT_EQ(again.status, 400);
  EXPECT_EQ(json::parse(again.body)["error"]["param"], "lora_name");
  const auto unloaded = post(port_, "/v1/unload_lora_adapter", R"({"lora_name":"sql"})");
  ASSERT_EQ(unloaded.status, 200) << unloaded.body;
  EXPECT_EQ(unloaded.body, "Success: LoRA adapter 'sql' removed successfully.");
  EXPECT_EQ(post(port_, "/v1/completions", R"({"model":"sql","prompt":"hi"})").status, 404);
  EXPECT_EQ(post(port_, "/v1/unload_lora_adapter", R"({"lora_name":"sql"})").status, 404);
}

TEST_F(lora_http_test, bad_bodies_name_the_field) {
  engine_.lora_updates = true;
  auto param = [&](const std::string& target, const std::string& body) {
    const auto r = post(port_, target, body);
    EXPECT_EQ(r.status, 400) << body;
    return json::parse(r.body)["error"]["param"].get<std::string>();
  };
  EXPECT_EQ(param("/v1/load_lora_adapter", R"({"lora_path":"/x"})"), "lora_name");
  EXPECT_EQ(param("/v1/load_lora_adapter", R"({"lora_name":"a"})"), "lora_path");
  EXPECT_EQ(param("/v1/load_lora_adapter", R"({"lora_name":"","lora_path":"/x"})"), "lora_name");
  EXPECT_EQ(param("/v1/load_lora_adapter", R"({"lora_name":"a","lora_path":7})"), "lora_path");
  EXPECT_EQ(param("/v1/load_lora_adapter",
                  json{{"lora_name", std::string(300, 'a')}, {"lora_path", "/x"}}.dump()),
            "lora_name");
  EXPECT_EQ(param("/v1/load_lora_adapter", R"({"lora_name":"a","lora_path":"/bad"})"), "lora_name");
  EXPECT_EQ(post(port_, "/v1/unload_lora_adapter", "[1]").status, 400);
  EXPECT_EQ(engine_.model().adapters.size(), 0u);
}

/// The status of GET /health, or 0 when no answer comes within `timeout` (a stuck server):
/// plain POSIX calls, whose receive timeout holds where Asio's blocking read would poll on.
int health_within(uint16_t port, std::chrono::seconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const timeval tv{static_cast<time_t>(timeout.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int status = 0;
  const std::string request =
      "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
      ::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char answer[64] = {};
    if (::recv(fd, answer, sizeof answer - 1, 0) > 12) status = std::atoi(answer + 9);
  }
  ::close(fd);
  return status;
}

// A slow adapter load (a large file, a slow disk) runs off the I/O thread: /health and other
// requests are answered meanwhile (one I/O thread here: a load on it would block them all).
TEST_F(lora_http_test, a_slow_load_does_not_hold_up_other_requests) {
  io_threads_ = 1;
  start();
  engine_.lora_updates = true;
  http_result loaded;
  std::thread loader([&] {
    loaded = post(port_, "/v1/load_lora_adapter", R"({"lora_name":"slow","lora_path":"/slow"})");
  });
  ASSERT_TRUE(engine_.wait_for_lora_load(std::chrono::seconds(5)));
  EXPECT_EQ(health_within(port_, std::chrono::seconds(3)), 200);
  engine_.release_lora_load();
  loader.join();
  EXPECT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded.body, "Success: LoRA adapter 'slow' added successfully.");
}

}  // namespace
}  // namespace actorllm::testing
