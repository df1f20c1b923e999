// HTTP details a careful client or an attacker relies on: 100-continue, HTTP/1.0 streams, blank
// lines between requests, Host (present, and ours: no DNS rebinding), HEAD, the key asked
// before the path is judged, JSON-only bodies and Origin on POST (no cross-site simple
// requests), WebSocket origins, and a metrics-only listener.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;
using http_protocol_test = server_fixture;

const std::string completion_body = R"({"prompt":"x","max_tokens":2})";

/// Writes `raw` and reads until the server closes or `until` appears.
std::string raw_round_trip(uint16_t port, const std::string& raw, const std::string& until = {}) {
  asio::io_context io;
  tcp::socket socket = connect(io, port);
  asio::write(socket, asio::buffer(raw));
  std::string seen;
  char data[4096];
  boost::system::error_code ec;
  while (until.empty() || seen.find(until) == std::string::npos) {
    const std::size_t n = socket.read_some(asio::buffer(data), ec);
    if (ec) break;
    seen.append(data, n);
  }
  return seen;
}

std::string post_line(const std::string& version, const std::string& body,
                      const std::string& extra_headers = "") {
  return "POST /v1/completions " + version + "\r\nHost: 127.0.0.1\r\n" + extra_headers +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

TEST_F(http_protocol_test, expect_100_continue_is_answered_before_the_body_is_sent) {
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  const std::string head = post_line("HTTP/1.1", completion_body, "Expect: 100-continue\r\n");
  asio::write(socket, asio::buffer(head.substr(0, head.size() - completion_body.size())));
  char data[256];
  const std::size_t n = socket.read_some(asio::buffer(data));  // blocks until the interim answer
  EXPECT_EQ(std::string(data, n), "HTTP/1.1 100 Continue\r\n\r\n");
  asio::write(socket, asio::buffer(completion_body));
  beast::flat_buffer buffer;
  const auto r = read_result(socket, buffer);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], "w0 w1 ");
}

TEST_F(http_protocol_test, an_http_1_0_stream_is_not_chunked_and_ends_by_closing) {
  const std::string body = R"({"prompt":"x","max_tokens":3,"stream":true})";
  const std::string answer = raw_round_trip(port_, post_line("HTTP/1.0", body));
  EXPECT_TRUE(answer.starts_with("HTTP/1.0 200 OK\r\n")) << answer;
  EXPECT_EQ(answer.find("Transfer-Encoding"), std::string::npos) << answer;
  const std::string sse = answer.substr(answer.find("\r\n\r\n") + 4);
  const auto payloads = sse_payloads(sse);
  ASSERT_FALSE(payloads.empty()) << sse;
  EXPECT_EQ(payloads.back(), "[DONE]");  // framed as bare SSE, no chunk sizes in between
}

TEST_F(http_protocol_test, blank_lines_between_requests_are_ignored) {
  const std::string answer = raw_round_trip(
      port_, "\r\n" + post_line("HTTP/1.1", completion_body) + "\r\n\r\n" +
                 "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK")) << answer;
  EXPECT_NE(answer.find("HTTP/1.1 200 OK", 10), std::string::npos) << answer;
  EXPECT_EQ(answer.find(" 400 "), std::string::npos) << answer;
}

TEST_F(http_protocol_test, http_1_1_without_host_is_a_400) {
  const std::string answer = raw_round_trip(port_, "GET /v1/models HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << answer;
  EXPECT_NE(answer.find("Host"), std::string::npos);
}

TEST_F(http_protocol_test, head_answers_where_get_does) {
  for (const char* path : {"/metrics", "/v1/models", "/version", "/health"}) {
    EXPECT_EQ(http_call(port_, http::verb::head, path).status, 200) << path;
  }
}

/// A POST of completion_body with `content_type` (no Content-Type header when empty).
std::string post_typed(uint16_t port, const std::string& content_type) {
  const std::string type = content_type.empty() ? "" : "Content-Type: " + content_type + "\r\n";
  return raw_round_trip(
      port, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + type +
                "Content-Length: " + std::to_string(completion_body.size()) + "\r\n\r\n" +
                completion_body);
}

TEST_F(http_protocol_test, non_json_bodies_are_refused_with_415_before_any_work) {
  for (const char* type :
       {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    const std::string answer = post_typed(port_, type);
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 415")) << type << ": " << answer;
    EXPECT_NE(answer.find("unsupported_media_type"), std::string::npos) << answer;
  }
  EXPECT_TRUE(engine_.submitted().empty());
  EXPECT_TRUE(post_typed(port_, "application/json; charset=utf-8").starts_with("HTTP/1.1 200"));
  // No type at all: what a page's fetch of a Blob sends, cross-site, without asking first.
  const std::string untyped = post_typed(port_, "");
  EXPECT_TRUE(untyped.starts_with("HTTP/1.1 415")) << untyped;
  EXPECT_NE(untyped.find("needs Content-Type: application/json"), std::string::npos) << untyped;
  EXPECT_EQ(engine_.submitted().size(), 1u);
}

int upgrade_status(uint16_t port, const std::string& origin, const std::string& host);

/// The status line of a GET of /v1/models, or a POST of completion_body, with `headers`.
std::string status_with(uint16_t port, bool post, const std::string& headers) {
  const std::string request =
      post ? "POST /v1/completions HTTP/1.1\r\n" + headers +
                 "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                 std::to_string(completion_body.size()) + "\r\n\r\n" + completion_body
           : "GET /v1/models HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n";
  const std::string answer = raw_round_trip(port, request);
  return answer.substr(0, answer.find("\r\n"));
}

TEST_F(http_protocol_test, a_host_that_is_not_ours_is_refused_against_dns_rebinding) {
  server_config config;
  config.allowed_hosts = {"LLM.Example.COM"};
  start(config);
  const std::string port = std::to_string(port_);
  const std::vector<std::string> ours = {
      "127.0.0.1:" + port, "localhost:" + port,       "[::1]:" + port,   "10.1.2.3",
      "api.localhost",     "llm.example.com:" + port, "llm.example.com."};
  for (const std::string& host : ours) {
    EXPECT_EQ(status_with(port_, false, "Host: " + host + "\r\n"), "HTTP/1.1 200 OK") << host;
    EXPECT_EQ(status_with(port_, true, "Host: " + host + "\r\n"), "HTTP/1.1 200 OK") << host;
  }
  // A rebinding domain's page names its own domain; so does anything not ours.
  const std::vector<std::string> foreign = {
      "evil.example:" + port,   "evil.example", "localhost.evil.example", "[::1", "[::1]x",
      "127.0.0.1.evil.example", ":" + port};
  for (const std::string& host : foreign) {
    EXPECT_EQ(status_with(port_, false, "Host: " + host + "\r\n"), "HTTP/1.1 403 Forbidden")
        << host;
    EXPECT_EQ(status_with(port_, true, "Host: " + host + "\r\n"), "HTTP/1.1 403 Forbidden") << host;
  }
  EXPECT_EQ(engine_.submitted().size(), 7u);
  EXPECT_EQ(upgrade_status(port_, "", "evil.example:" + port), 403);
  EXPECT_EQ(upgrade_status(port_, "", "127.0.0.1:" + port), 101);
}

TEST_F(http_protocol_test, any_host_is_served_with_allowed_hosts_star) {
  server_config config;
  config.allowed_hosts = {"*"};
  start(config);
  EXPECT_EQ(status_with(port_, false, "Host: anything.example\r\n"), "HTTP/1.1 200 OK");
}

TEST_F(http_protocol_test, a_post_from_a_foreign_origin_is_refused) {
  server_config config;
  config.allowed_origins = {"https://app.example"};
  start(config);
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  EXPECT_EQ(status_with(port_, true, host + "Origin: https://evil.example\r\n"),
            "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(status_with(port_, true, host + "Origin: null\r\n"), "HTTP/1.1 403 Forbidden");
  EXPECT_TRUE(engine_.submitted().empty());
  EXPECT_EQ(status_with(port_, true, host + "Origin: https://app.example\r\n"), "HTTP/1.1 200 OK");
  EXPECT_EQ(
      status_with(port_, true, host + "Origin: http://127.0.0.1:" + std::to_string(port_) + "\r\n"),
      "HTTP/1.1 200 OK");                                        // the server's own page
  EXPECT_EQ(status_with(port_, true, host), "HTTP/1.1 200 OK");  // not a browser
  // GETs carry no body to act on; CORS alone decides whether the page may read them.
  EXPECT_EQ(status_with(port_, false, host + "Origin: https://evil.example\r\n"),
            "HTTP/1.1 200 OK");
}

TEST_F(http_protocol_test, the_key_is_asked_before_the_path_is_judged) {
  server_config config;
  config.api_key = "sk-secret";
  start(config);
  const auto unknown = get(port_, "/admin/secret-path");
  EXPECT_EQ(unknown.status, 401);  // not 404: a client without the key learns nothing
  EXPECT_EQ(unknown.header("www-authenticate"), "Bearer");
  EXPECT_EQ(http_call(port_, http::verb::delete_, "/v1/models").status, 401);  // not 405
  EXPECT_EQ(get(port_, "/v1/models", {{"Authorization", "bearer sk-secret"}}).status, 200);
  EXPECT_EQ(get(port_, "/v1/models", {{"Authorization", "BEARER sk-secret"}}).status, 200);
  EXPECT_EQ(get(port_, "/v1/models", {{"Authorization", "Bearer sk-SECRET"}}).status, 401);
  EXPECT_EQ(get(port_, "/nowhere", {{"Authorization", "Bearer sk-secret"}}).status, 404);
  EXPECT_EQ(get(port_, "/health").status, 200);  // probes need no key
}

/// The HTTP status of a WebSocket upgrade to /v1/ws with `origin` (none when empty).
int upgrade_status(uint16_t port, const std::string& origin, const std::string& host) {
  asio::io_context io;
  tcp::socket socket = connect(io, port);
  websocket::stream<tcp::socket> ws(std::move(socket));
  ws.set_option(websocket::stream_base::decorator([&](websocket::request_type& req) {
    if (!origin.empty()) req.set(http::field::origin, origin);
  }));
  websocket::response_type response;
  boost::system::error_code ec;
  ws.handshake(response, host, "/v1/ws", ec);
  return response.result_int();
}

TEST_F(http_protocol_test, a_websocket_from_a_foreign_origin_is_refused) {
  server_config config;
  config.allowed_origins = {"https://app.example"};
  start(config);
  const std::string host = "127.0.0.1:" + std::to_string(port_);
  EXPECT_EQ(upgrade_status(port_, "https://evil.example", host), 403);
  EXPECT_EQ(upgrade_status(port_, "https://app.example", host), 101);
  EXPECT_EQ(upgrade_status(port_, "http://" + host, host), 101);  // the server's own page
  EXPECT_EQ(upgrade_status(port_, "", host), 101);                // not a browser
}

TEST_F(http_protocol_test, a_metrics_only_listener_serves_metrics_alone) {
  net::http_options options;
  options.metrics_only = true;
  start({}, options);
  EXPECT_EQ(get(port_, "/metrics").status, 200);
  EXPECT_EQ(get(port_, "/v1/models").status, 404);
  EXPECT_EQ(post(port_, "/v1/completions", completion_body).status, 404);
  EXPECT_TRUE(engine_.submitted().empty());
}

/// A completions body with `num_prompts` one-word prompts and `extra` fields.
std::string many_prompts(int num_prompts, const std::string& extra) {
  json prompts = json::array();
  for (int i = 0; i < num_prompts; ++i) prompts.push_back("x");
  return json({{"prompt", prompts}}).dump().insert(1, extra.empty() ? "" : extra + ",");
}

TEST_F(http_protocol_test, a_request_too_large_to_ever_answer_is_a_400_not_a_503) {
  net::http_options options;
  options.max_waiting_requests = 64;
  start({}, options);
  // More sequences than the queue ever holds: a 503 "retry later" could never succeed.
  auto r = post(port_, "/v1/completions", many_prompts(65, R"("max_tokens":1)"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "prompt");
  r = post(port_, "/v1/completions", many_prompts(8, R"("max_tokens":1,"n":9)"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "n");
  EXPECT_EQ(post(port_, "/v1/completions", many_prompts(8, R"("max_tokens":1,"n":8)")).status, 200);
  EXPECT_EQ(engine_.submitted().size(), 8u);
}

TEST_F(http_protocol_test, prompts_per_request_and_logprob_volume_are_bounded) {
  auto r = post(port_, "/v1/completions", many_prompts(1025, R"("max_tokens":1)"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("at most 1024 prompts"), std::string::npos) << r.body;
  // 4 prompts x n 16 x 4,096 tokens x (1 + 20) alternatives: about 5.5 million entries.
  r = post(port_, "/v1/completions", many_prompts(4, R"("max_tokens":4096,"n":16,"logprobs":20)"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "max_tokens");
  EXPECT_TRUE(engine_.submitted().empty());
  // The same without logprobs is plain text, which stays allowed.
  EXPECT_EQ(post(port_, "/v1/completions", many_prompts(1, R"("max_tokens":3,"n":2)")).status, 200);
}

}  // namespace
}  // namespace actorllm::testing
