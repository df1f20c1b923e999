// The HTTP server against a fake engine, with Beast as the client: JSON answers, SSE
// framing, every error status, disconnects that abort, keep-alive and a burst of streams.
#include "net/http_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

using http_server_test = server_fixture;

std::string text_of_stream(const std::vector<std::string>& payloads, bool chat) {
  std::string text;
  for (const auto& p : payloads) {
    if (p == "[DONE]") break;
    const json chunk = json::parse(p);
    for (const auto& choice : chunk["choices"]) {
      if (chat)
        text += choice["delta"].value("content", "");
      else
        text += choice["text"].get<std::string>();
    }
  }
  return text;
}

TEST_F(http_server_test, small_endpoints) {
  EXPECT_EQ(get(port_, "/health").status, 200);
  EXPECT_EQ(http_call(port_, http::verb::head, "/health").status, 200);
  EXPECT_FALSE(json::parse(get(port_, "/version").body)["version"].get<std::string>().empty());
  const auto models = json::parse(get(port_, "/v1/models").body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "fake-model");
  EXPECT_EQ(models["data"][0]["max_model_len"], 4096);
  EXPECT_EQ(get(port_, "/v1/models/fake-model").status, 200);
  EXPECT_EQ(get(port_, "/v1/models/other").status, 404);
  const auto metrics = get(port_, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.header("content-type").find("version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.body.find("actorllm:fake 1"), std::string::npos);

  EXPECT_EQ(get(port_, "/ping").status, 200);  // vLLM's alias, GET and POST
  EXPECT_EQ(http_call(port_, http::verb::post, "/ping").status, 200);
  engine_.alive = false;  // the engine loop died: /health must say so
  const auto health = get(port_, "/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(get(port_, "/ping").status, 503);
  EXPECT_EQ(json::parse(health.body)["error"]["type"], "server_error");
}

TEST_F(http_server_test, completion_non_streaming) {
  const auto r =
      post(port_, "/v1/completions", R"({"model":"fake-model","prompt":"hi","max_tokens":3})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["text"], "w0 w1 w2 ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  const auto submitted = engine_.submitted();
  ASSERT_EQ(submitted.size(), 1u);
  EXPECT_EQ(submitted[0].text, "hi");
  EXPECT_EQ(submitted[0].model, "fake-model");
  EXPECT_EQ(submitted[0].params.max_tokens, 3);
}

TEST_F(http_server_test, completion_fan_out_and_logprobs) {
  const auto r =
      post(port_, "/v1/completions", R"({"prompt":[[1,2],[3]],"n":2,"max_tokens":2,"logprobs":1})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], "w0 w1 ");
    EXPECT_EQ(j["choices"][i]["logprobs"]["tokens"], json({"w0 ", "w1 "}));
    EXPECT_EQ(j["choices"][i]["logprobs"]["top_logprobs"][0]["a0"], -0.5);
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
}

TEST_F(http_server_test, chat_non_streaming) {
  const auto r = post(port_, "/v1/chat/completions",
                      R"({"model":"fake-model","messages":[{"role":"user","content":"hi"}],
                          "max_tokens":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "w0 w1 ");
  const auto submitted = engine_.submitted();
  ASSERT_EQ(submitted.size(), 1u);
  EXPECT_EQ(submitted[0].kind, prompt_kind::chat);
  EXPECT_EQ(json::parse(submitted[0].chat_json)["messages"][0]["content"], "hi");
}

TEST_F(http_server_test, completion_sse_framing) {
  const auto r = post(port_, "/v1/completions", R"({"prompt":"x","max_tokens":5,"stream":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  EXPECT_EQ(r.header("transfer-encoding"), "chunked");
  const auto payloads = sse_payloads(r.body);
  ASSERT_GE(payloads.size(), 2u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  EXPECT_EQ(r.body.substr(r.body.size() - 14), "data: [DONE]\n\n");
  EXPECT_EQ(text_of_stream(payloads, false), "w0 w1 w2 w3 w4 ");
  const json last = json::parse(payloads[payloads.size() - 2]);
  EXPECT_EQ(last["object"], "text_completion");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  for (std::size_t i = 0; i + 1 < payloads.size(); ++i) {
    EXPECT_FALSE(json::parse(payloads[i]).contains("usage"));  // not asked for
  }
}

TEST_F(http_server_test, chat_sse_role_first_and_usage_last) {
  const auto r = post(port_, "/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":4,
                          "stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto payloads = sse_payloads(r.body);
  ASSERT_GE(payloads.size(), 4u);
  const json first = json::parse(payloads[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(text_of_stream(payloads, true), "w0 w1 w2 w3 ");
  const json usage = json::parse(payloads[payloads.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
  for (std::size_t i = 0; i + 2 < payloads.size(); ++i) {
    const json chunk = json::parse(payloads[i]);
    EXPECT_TRUE(chunk.contains("usage") && chunk["usage"].is_null()) << payloads[i];
  }
  EXPECT_EQ(payloads.back(), "[DONE]");
}

// vLLM's --response-role and --enable-force-include-usage.
TEST_F(http_server_test, the_response_role_and_forced_usage_follow_the_flags) {
  server_config config;
  config.response_role = "bot";
  config.force_include_usage = true;
  start(config);
  const auto whole = post(port_, "/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2})");
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(json::parse(whole.body)["choices"][0]["message"]["role"], "bot");
  // No stream_options: the usage comes all the same.
  const auto r =
      post(port_, "/v1/chat/completions",
           R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto payloads = sse_payloads(r.body);
  ASSERT_GE(payloads.size(), 3u);
  EXPECT_EQ(json::parse(payloads[0])["choices"][0]["delta"]["role"], "bot");
  const json usage = json::parse(payloads[payloads.size() - 2]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3) << payloads[payloads.size() - 2];
}

TEST_F(http_server_test, tokenize_and_detokenize) {
  auto r = post(port_, "/tokenize", R"({"prompt":"ab"})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["tokens"], json({1, 97, 98}));
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["max_model_len"], 4096);
  r = post(port_, "/detokenize", R"({"tokens":[104,105]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["prompt"], "hi");
  EXPECT_EQ(post(port_, "/detokenize", R"({"tokens":[1000]})").status, 400);
  EXPECT_EQ(post(port_, "/detokenize", R"({"tokens":[104],"model":"/models/fake"})").status, 200);
  EXPECT_EQ(post(port_, "/detokenize", R"({"tokens":[104],"model":"nope"})").status, 404);
  EXPECT_EQ(post(port_, "/tokenize", R"({"prompt":"x","model":"nope"})").status, 404);
}

TEST_F(http_server_test, the_model_argument_is_accepted_beside_the_served_name) {
  // vLLM serves a model under its --model argument; clients written for it send that.
  auto r =
      post(port_, "/v1/completions", R"({"model":"/models/fake","prompt":"hi","max_tokens":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "/models/fake");  // echoed as asked, as vLLM does
  const auto submitted = engine_.submitted();
  ASSERT_EQ(submitted.size(), 1u);
  EXPECT_EQ(submitted[0].model, "fake-model");  // the engine knows one name
  r = post(port_, "/tokenize", R"({"prompt":"ab","model":"/models/fake"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["count"], 3);
  EXPECT_EQ(post(port_, "/v1/completions", R"({"model":"models/fake","prompt":"hi"})").status, 404);
  const auto models = json::parse(get(port_, "/v1/models").body);
  ASSERT_EQ(models["data"].size(), 1u);  // one model, listed once, by its served name
  EXPECT_EQ(models["data"][0]["id"], "fake-model");
}

void expect_error(const http_result& r, int status, const std::string& param = {}) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param);
  }
}

TEST_F(http_server_test, errors_400_404_405_413_500) {
  expect_error(post(port_, "/v1/completions", "{not json"), 400);
  expect_error(post(port_, "/v1/completions", R"({"prompt":"x","n":0})"), 400, "n");
  expect_error(post(port_, "/v1/chat/completions", R"({"messages":5})"), 400, "messages");
  // The engine's own rejection keeps its status and message, streaming or not.
  auto r = post(port_, "/v1/completions", R"({"prompt":"too long"})");
  expect_error(r, 400);
  EXPECT_NE(r.body.find("4096"), std::string::npos);
  EXPECT_NE(r.body.find("5000"), std::string::npos);
  r = post(port_, "/v1/completions", R"({"prompt":"too long","stream":true})");
  expect_error(r, 400);
  EXPECT_EQ(r.header("content-type"), "application/json");

  expect_error(post(port_, "/v1/completions", R"({"model":"gpt-4","prompt":"x"})"), 404, "model");
  expect_error(get(port_, "/v2/nothing"), 404);
  r = get(port_, "/v1/completions");
  expect_error(r, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  expect_error(post(port_, "/v1/completions", std::string(100 * 1024, ' ')), 413);
  expect_error(post(port_, "/v1/completions", R"({"prompt":"throw"})"), 500);
  // The server lives on.
  EXPECT_EQ(post(port_, "/v1/completions", R"({"prompt":"x","max_tokens":1})").status, 200);
}

TEST_F(http_server_test, backpressure_503) {
  server_.reset();
  net::http_options options;
  options.max_waiting_requests = 5;
  start({}, options);
  engine_.waiting = 5;
  const auto r = post(port_, "/v1/completions", R"({"prompt":"x"})");
  expect_error(r, 503);
  EXPECT_EQ(r.header("retry-after"), "1");
  engine_.waiting = 4;
  EXPECT_EQ(post(port_, "/v1/completions", R"({"prompt":"x","max_tokens":1})").status, 200);
}

TEST_F(http_server_test, api_key_401) {
  server_.reset();
  server_config config;
  config.api_key = "sekret";
  start(config);
  expect_error(post(port_, "/v1/completions", R"({"prompt":"x"})"), 401);
  expect_error(
      post(port_, "/v1/completions", R"({"prompt":"x"})", {{"Authorization", "Bearer nope"}}), 401);
  expect_error(get(port_, "/v1/models", {{"Authorization", "sekret"}}), 401);
  EXPECT_EQ(post(port_, "/v1/completions", R"({"prompt":"x","max_tokens":1})",
                 {{"Authorization", "Bearer sekret"}})
                .status,
            200);
  EXPECT_EQ(get(port_, "/health").status, 200);  // probes need no key
}

TEST_F(http_server_test, cors_and_request_ids) {
  server_.reset();
  server_config config;
  config.allowed_origins = {"http://app.example"};
  start(config);
  auto r = get(port_, "/v1/models", {{"Origin", "http://app.example"}, {"X-Request-Id", "abc-1"}});
  EXPECT_EQ(r.header("access-control-allow-origin"), "http://app.example");
  EXPECT_EQ(r.header("x-request-id"), "abc-1");
  r = get(port_, "/v1/models", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(r.header("access-control-allow-origin"), "");
  EXPECT_EQ(r.header("x-request-id").size(), 32u);  // generated
  r = http_call(port_, http::verb::options, "/v1/chat/completions", {},
                {{"Origin", "http://app.example"},
                 {"Access-Control-Request-Method", "POST"},
                 {"Access-Control-Request-Headers", "authorization, content-type"}});
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.header("access-control-allow-origin"), "http://app.example");
  EXPECT_NE(r.header("access-control-allow-methods").find("POST"), std::string::npos);
  EXPECT_EQ(r.header("access-control-allow-headers"), "authorization, content-type");
}

TEST_F(http_server_test, keep_alive_serves_several_requests_on_one_connection) {
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  beast::flat_buffer buffer;
  for (int round = 0; round < 3; ++round) {
    http::write(socket, make_request(http::verb::post, "/v1/completions",
                                     R"({"prompt":"x","max_tokens":3,"stream":true})", {}));
    auto r = read_result(socket, buffer);
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(text_of_stream(sse_payloads(r.body), false), "w0 w1 w2 ");
    http::write(socket, make_request(http::verb::post, "/v1/completions",
                                     R"({"prompt":"x","max_tokens":2})", {}));
    r = read_result(socket, buffer);
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(json::parse(r.body)["choices"][0]["text"], "w0 w1 ");
    http::write(socket, make_request(http::verb::get, "/health", {}, {}));
    EXPECT_EQ(read_result(socket, buffer).status, 200);
  }
}

TEST_F(http_server_test, client_disconnect_mid_stream_aborts) {
  engine_.token_delay = std::chrono::milliseconds(2);
  asio::io_context io;
  tcp::socket socket = connect(io, port_);
  http::write(socket, make_request(http::verb::post, "/v1/completions",
                                   R"({"prompt":"x","max_tokens":100000,"stream":true})", {}));
  std::string seen;
  char data[1024];
  while (seen.find("data: ") == std::string::npos) {
    seen.append(data, socket.read_some(asio::buffer(data)));
  }
  socket.close();
  ASSERT_TRUE(engine_.wait_for_abort(std::chrono::seconds(2)));
  EXPECT_TRUE(engine_.was_aborted(engine_.submitted().at(0).request_id));
}

TEST_F(http_server_test, client_disconnect_while_waiting_aborts) {
  engine_.token_delay = std::chrono::milliseconds(50);
  for (const char* body : {R"({"prompt":"x","max_tokens":1000})",
                           R"({"prompt":"x","max_tokens":1000,"stream":true})"}) {
    asio::io_context io;
    tcp::socket socket = connect(io, port_);
    http::write(socket, make_request(http::verb::post, "/v1/completions", body, {}));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // before the first token
    socket.close();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (engine_.num_aborted() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(engine_.num_aborted(), 2u);
}

TEST_F(http_server_test, malformed_http_gets_400_and_the_server_lives_on) {
  {
    asio::io_context io;
    tcp::socket socket = connect(io, port_);
    asio::write(socket, asio::buffer(std::string("GARBAGE\x01\x02 / HTTP/9\r\n\r\n")));
    beast::flat_buffer buffer;
    EXPECT_EQ(read_result(socket, buffer).status, 400);
  }
  {
    asio::io_context io;
    tcp::socket socket = connect(io, port_);
    asio::write(
        socket,
        asio::buffer(std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{")));
    socket.close();  // half a request, then gone
  }
  EXPECT_EQ(get(port_, "/health").status, 200);
}

TEST_F(http_server_test, two_hundred_concurrent_streams_all_complete) {
  engine_.token_delay = std::chrono::milliseconds(1);
  constexpr int num_clients = 200;
  std::atomic<int> num_ok{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < num_clients; ++i) {
    clients.emplace_back([&, i] {
      try {
        const bool chat = i % 2;
        const auto r =
            chat
                ? post(
                      port_, "/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":20,"stream":true})")
                : post(port_, "/v1/completions", R"({"prompt":"x","max_tokens":20,"stream":true})");
        const auto payloads = sse_payloads(r.body);
        std::string expected;
        for (int t = 0; t < 20; ++t) expected += 'w' + std::to_string(t) + ' ';
        if (r.status == 200 && !payloads.empty() && payloads.back() == "[DONE]" &&
            text_of_stream(payloads, chat) == expected) {
          ++num_ok;
        }
      } catch (const std::exception&) {
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(num_ok.load(), num_clients);
}

}  // namespace
}  // namespace actorllm::testing
