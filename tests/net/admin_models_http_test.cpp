// The models' admin API over HTTP against a fake model_admin_port: who may call it, what
// reaches the port, what comes back, and what a server of one model answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/net/fake_admin.hpp"
#include "tests/net/fake_model_admin.hpp"
#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

const header_list models_admin_key = {{"Authorization", "Bearer adm-secret"}};

class admin_models_http_test : public server_fixture {
 protected:
  void SetUp() override {}  // each test starts the server it needs

  /// A server with the admin key "adm-secret" (and the API key `api_key`) in front of models_
  /// and the replicas' admin_.
  void start_admin(std::string api_key = {}) {
    server_config config;
    config.admin_api_key = "adm-secret";
    config.api_key = std::move(api_key);
    net::http_options options;
    options.models_admin = &models_;
    start(config, options, &admin_);
  }

  http_result admin_call(http::verb method, const std::string& target,
                         const std::string& body = {}) {
    return http_call(port_, method, target, body, models_admin_key);
  }

  fake_admin admin_;
  fake_model_admin models_;
};

void expect_models_error(const http_result& r, int status, const std::string& type,
                         const json& code = nullptr) {
  EXPECT_EQ(r.status, status) << r.body;
  const json body = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << r.body;
  EXPECT_EQ(body["error"]["type"], type) << r.body;
  EXPECT_FALSE(body["error"]["message"].get<std::string>().empty());
  if (!code.is_null()) {
    EXPECT_EQ(body["error"]["code"], code) << r.body;
  }
}

TEST_F(admin_models_http_test, only_the_admin_key_opens_it) {
  start_admin("sk-api");
  for (const auto& [method, target] : std::vector<std::pair<http::verb, std::string>>{
           {http::verb::get, "/admin/models"},
           {http::verb::post, "/admin/models"},
           {http::verb::delete_, "/admin/models/qwen"},
           {http::verb::delete_, "/admin/models/-bad"}}) {
    expect_models_error(http_call(port_, method, target, R"({"name":"llama"})"), 401,
                        "invalid_request_error", "invalid_api_key");
    expect_models_error(http_call(port_, method, target, R"({"name":"llama"})",
                                  {{"Authorization", "Bearer sk-api"}}),
                        401, "invalid_request_error", "invalid_api_key");
  }
  EXPECT_TRUE(models_.calls().empty());
  EXPECT_EQ(admin_call(http::verb::get, "/admin/models").status, 200);
  // Without --admin-api-key there is no /admin at all.
  net::http_options options;
  options.models_admin = &models_;
  start({}, options, &admin_);
  EXPECT_EQ(admin_call(http::verb::get, "/admin/models").status, 404);
  EXPECT_EQ(models_.calls(), std::vector<std::string>{"list"});
}

TEST_F(admin_models_http_test, lists_the_models_with_every_field) {
  start_admin();
  const auto r = admin_call(http::verb::get, "/admin/models");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json body = json::parse(r.body);
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 3u);
  EXPECT_EQ(body["data"][0], json::parse(R"({"id":"qwen","object":"model","path":"/models/qwen3",
      "state":"loaded","weight_bytes":1610612736,"kv_cache_bytes":268435456,
      "requests_in_flight":2,"idle_seconds":0.0})"));
  EXPECT_FALSE(body["data"][1].contains("error"));
  EXPECT_EQ(body["data"][2]["error"], "config.json: no such file");
}

TEST_F(admin_models_http_test, load_reaches_the_port_and_answers_202) {
  start_admin();
  auto r = admin_call(http::verb::post, "/admin/models",
                      R"({"name":"mini","path":"/models/mini","flags":{"max_model_len":512}})");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"id":"mini","state":"loading"})"));
  r = admin_call(http::verb::post, "/admin/models", R"({"name":"llama"})");
  ASSERT_EQ(r.status, 202) << r.body;
  // The port's refusals pass through with their status and message.
  r = admin_call(http::verb::post, "/admin/models", R"({"name":"qwen"})");
  expect_models_error(r, 409, "invalid_request_error");
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "model 'qwen' is loaded");
  r = admin_call(http::verb::post, "/admin/models", R"({"name":"nowhere"})");
  expect_models_error(r, 400, "invalid_request_error");
  EXPECT_EQ(models_.calls(),
            (std::vector<std::string>{R"(load mini /models/mini {"max_model_len":512})",
                                      "load llama  ", "load qwen  ", "load nowhere  "}));
  const json list = json::parse(admin_call(http::verb::get, "/admin/models").body);
  EXPECT_EQ(list["data"][1]["state"], "loading");
  EXPECT_EQ(list["data"][3]["id"], "mini");
}

TEST_F(admin_models_http_test, bad_load_bodies_are_400s_naming_the_field) {
  start_admin();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{}", "name"},
      {R"({"name":null})", "name"},
      {R"({"name":["qwen"]})", "name"},
      {R"({"name":"a/b"})", "name"},
      {R"({"name":")" + std::string(65, 'x') + R"("})", "name"},
      {R"({"name":"x","path":3})", "path"},
      {R"({"name":"x","path":""})", "path"},
      {R"({"name":"x","flags":"max_model_len=512"})", "flags"},
      {R"({"name":"x","flags":null})", "flags"},
      {R"({"name":"x","replicas":2})", "replicas"}};
  for (const auto& [body, field] : bad) {
    const auto r = admin_call(http::verb::post, "/admin/models", body);
    expect_models_error(r, 400, "invalid_request_error");
    EXPECT_EQ(json::parse(r.body)["error"]["param"], field) << body;
  }
  for (const std::string body : {"", "not json", "[1]", R"({"name":)"}) {
    expect_models_error(admin_call(http::verb::post, "/admin/models", body), 400,
                        "invalid_request_error");
  }
  EXPECT_TRUE(models_.calls().empty());
}

TEST_F(admin_models_http_test, unload_drains_the_named_model) {
  start_admin();
  auto r = admin_call(http::verb::delete_, "/admin/models/qwen");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"id":"qwen","state":"draining"})"));
  r = admin_call(http::verb::delete_, "/admin/models/qwen");
  expect_models_error(r, 409, "invalid_request_error");
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "model 'qwen' is draining");
  r = admin_call(http::verb::delete_, "/admin/models/nope");
  expect_models_error(r, 404, "invalid_request_error", "model_not_found");
  EXPECT_EQ(models_.calls(),
            (std::vector<std::string>{"unload qwen", "unload qwen", "unload nope"}));
}

TEST_F(admin_models_http_test, a_name_that_is_no_model_name_is_a_400) {
  start_admin();
  for (const std::string& name : std::vector<std::string>{"-x", ".hidden", "a%2Fb", "%2e%2e",
                                                          "a%20b", "x;y", std::string(65, 'a')}) {
    const auto r = admin_call(http::verb::delete_, "/admin/models/" + name);
    expect_models_error(r, 400, "invalid_request_error");
    EXPECT_EQ(json::parse(r.body)["error"]["param"], "name") << name;
  }
  EXPECT_EQ(admin_call(http::verb::delete_, "/admin/models/a/b").status, 404);
  EXPECT_EQ(admin_call(http::verb::delete_, "/admin/models/" + std::string(64, 'a')).status, 404);
  EXPECT_EQ(models_.calls(), std::vector<std::string>{"unload " + std::string(64, 'a')});
}

TEST_F(admin_models_http_test, a_wrong_method_is_a_405_with_allow) {
  start_admin();
  auto r = admin_call(http::verb::delete_, "/admin/models");
  expect_models_error(r, 405, "invalid_request_error", "method_not_allowed");
  EXPECT_EQ(r.header("allow"), "GET, POST");
  r = admin_call(http::verb::put, "/admin/models", "{}");
  EXPECT_EQ(r.status, 405);
  for (const auto method : {http::verb::get, http::verb::post, http::verb::put}) {
    r = admin_call(method, "/admin/models/qwen", method == http::verb::get ? "" : "{}");
    expect_models_error(r, 405, "invalid_request_error", "method_not_allowed");
    EXPECT_EQ(r.header("allow"), "DELETE");
  }
  EXPECT_TRUE(models_.calls().empty());
}

TEST_F(admin_models_http_test, a_server_of_one_model_answers_501) {
  server_config config;
  config.admin_api_key = "adm-secret";
  start(config, {}, &admin_);
  for (const auto& [method, target] : std::vector<std::pair<http::verb, std::string>>{
           {http::verb::get, "/admin/models"},
           {http::verb::post, "/admin/models"},
           {http::verb::delete_, "/admin/models/qwen"}}) {
    const auto r = admin_call(method, target, method == http::verb::post ? "{}" : "");
    expect_models_error(r, 501, "server_error", "models_admin_unavailable");
    EXPECT_NE(json::parse(r.body)["error"]["message"].get<std::string>().find("one model"),
              std::string::npos);
  }
  EXPECT_EQ(admin_call(http::verb::get, "/admin/replicas").status, 200);
  expect_models_error(get(port_, "/admin/models"), 401, "invalid_request_error");
}

TEST_F(admin_models_http_test, requests_are_counted_by_route_not_by_name) {
  start_admin();
  admin_call(http::verb::delete_, "/admin/models/qwen");
  admin_call(http::verb::delete_, "/admin/models/other?x=1");
  admin_call(http::verb::get, "/admin/models");
  std::vector<std::string> counted = engine_.http_requests(3);
  std::sort(counted.begin(), counted.end());
  EXPECT_EQ(counted, (std::vector<std::string>{"/admin/models 200", "/admin/models/{name} 202",
                                               "/admin/models/{name} 404"}));
}

}  // namespace
}  // namespace actorllm::testing
