// The blocking client of `actorllm admin`: URLs, a real exchange with the server, and the
// failures it reports instead of throwing (refused, timed out).
#include "net/http_client.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

#include "tests/net/fake_admin.hpp"
#include "tests/net/server_fixture.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

TEST(http_client, urls) {
  std::string error;
  auto url = net::parse_http_url("http://127.0.0.1:8000", error);
  ASSERT_TRUE(url) << error;
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, "8000");
  EXPECT_EQ(url->prefix, "");
  url = net::parse_http_url("http://server/api/", error);
  ASSERT_TRUE(url) << error;
  EXPECT_EQ(url->host, "server");
  EXPECT_EQ(url->port, "80");
  EXPECT_EQ(url->prefix, "/api");
  url = net::parse_http_url("http://[::1]:9000", error);
  ASSERT_TRUE(url) << error;
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, "9000");
  for (const char* bad : {"https://x", "127.0.0.1:8000", "http://", "http://x:", "http://x:99999",
                          "http://x:80a", "http://[::1"}) {
    error.clear();
    EXPECT_FALSE(net::parse_http_url(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

class http_client_test : public server_fixture {
 protected:
  net::http_url url() const { return {"127.0.0.1", std::to_string(port_), ""}; }
};

TEST_F(http_client_test, talks_to_the_server) {
  auto reply = net::http_fetch(url(), "GET", "/v1/models", "", "");
  ASSERT_TRUE(reply.error.empty()) << reply.error;
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(json::parse(reply.body)["data"][0]["id"], "fake-model");
  reply = net::http_fetch(url(), "GET", "/nowhere", "", "");
  EXPECT_EQ(reply.status, 404);
  EXPECT_TRUE(reply.error.empty());
}

TEST_F(http_client_test, sends_the_key_and_the_body) {
  fake_admin admin;
  server_config config;
  config.admin_api_key = "adm";
  start(config, {}, &admin);
  auto reply = net::http_fetch(url(), "POST", "/admin/replicas", R"({"count":2})", "adm");
  EXPECT_EQ(reply.status, 202) << reply.body;
  EXPECT_EQ(admin.calls(), std::vector<std::string>{"add 2 "});
  reply = net::http_fetch(url(), "DELETE", "/admin/replicas/1", "", "adm");
  EXPECT_EQ(reply.status, 202) << reply.body;
  EXPECT_EQ(net::http_fetch(url(), "GET", "/admin/replicas", "", "").status, 401);
  server_.reset();  // before `admin`, which it calls
}

TEST(http_client, a_refused_connection_is_an_error_not_an_exception) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = std::to_string(acceptor.local_endpoint().port());
  acceptor.close();  // nothing listens there now
  const auto reply = net::http_fetch({"127.0.0.1", port, ""}, "GET", "/", "", "");
  EXPECT_EQ(reply.status, 0);
  EXPECT_NE(reply.error.find("connection refused"), std::string::npos) << reply.error;
}

TEST(http_client, a_server_that_never_answers_times_out) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto port = std::to_string(acceptor.local_endpoint().port());
  // The kernel accepts the connection into the backlog; nobody ever reads or writes.
  const auto start = std::chrono::steady_clock::now();
  const auto reply = net::http_fetch({"127.0.0.1", port, ""}, "GET", "/", "", "", 0.2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(reply.status, 0);
  EXPECT_NE(reply.error.find("timed out"), std::string::npos) << reply.error;
}

}  // namespace
}  // namespace actorllm::testing
