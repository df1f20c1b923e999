// The admin API over HTTP against a fake admin_port: who may call it, what reaches the port,
// what comes back.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/net/fake_admin.hpp"
#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;

const header_list admin_key = {{"Authorization", "Bearer adm-secret"}};

class admin_http_test : public server_fixture {
 protected:
  void SetUp() override {}  // each test starts the server it needs

  /// A server with the admin key "adm-secret" (and no API key unless given) in front of admin_.
  void start_admin(std::string api_key = {}) {
    server_config config;
    config.admin_api_key = "adm-secret";
    config.api_key = std::move(api_key);
    start(config, {}, &admin_);
  }

  http_result admin_call(http::verb method, const std::string& target,
                         const std::string& body = {}) {
    return http_call(port_, method, target, body, admin_key);
  }

  fake_admin admin_;
};

/// Every admin request the tests make, known paths and unknown ones.
const std::vector<std::pair<http::verb, std::string>> admin_requests = {
    {http::verb::get, "/admin/replicas"},
    {http::verb::post, "/admin/replicas"},
    {http::verb::post, "/admin/replicas/0/drain"},
    {http::verb::delete_, "/admin/replicas/0"},
    {http::verb::get, "/admin"},
    {http::verb::get, "/admin/other"}};

void expect_admin_error(const http_result& r, int status, const std::string& type,
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

TEST_F(admin_http_test, without_an_admin_key_there_is_no_admin_api) {
  start({}, {}, &admin_);
  for (const auto& [method, target] : admin_requests) {
    EXPECT_EQ(admin_call(method, target, "{}").status, 404) << target;
    EXPECT_EQ(http_call(port_, method, target, "{}").status, 404) << target;
  }
  // With an API key, /admin is an unknown path like any other: 401 first, then 404.
  server_config config;
  config.api_key = "sk-api";
  start(config, {}, &admin_);
  EXPECT_EQ(get(port_, "/admin/replicas").status, 401);
  EXPECT_EQ(get(port_, "/admin/replicas", {{"Authorization", "Bearer sk-api"}}).status, 404);
  EXPECT_TRUE(admin_.calls().empty());
}

TEST_F(admin_http_test, only_the_admin_key_opens_it) {
  start_admin("sk-api");
  for (const auto& [method, target] : admin_requests) {
    expect_admin_error(http_call(port_, method, target, "{}"), 401, "invalid_request_error",
                       "invalid_api_key");
    expect_admin_error(http_call(port_, method, target, "{}", {{"Authorization", "Bearer wrong"}}),
                       401, "invalid_request_error", "invalid_api_key");
    expect_admin_error(
        http_call(port_, method, target, "{}", {{"Authorization", "Bearer adm-secre"}}), 401,
        "invalid_request_error", "invalid_api_key");
    // The ordinary API key grants nothing here.
    expect_admin_error(http_call(port_, method, target, "{}", {{"Authorization", "Bearer sk-api"}}),
                       401, "invalid_request_error", "invalid_api_key");
  }
  EXPECT_EQ(get(port_, "/admin/replicas").header("www-authenticate"), "Bearer");
  EXPECT_TRUE(admin_.calls().empty());
  // The admin key needs no API key beside it, and it does not open the API.
  EXPECT_EQ(admin_call(http::verb::get, "/admin/replicas").status, 200);
  EXPECT_EQ(get(port_, "/v1/models", admin_key).status, 401);
  EXPECT_EQ(admin_call(http::verb::get, "/admin/other").status, 404);
}

TEST_F(admin_http_test, lists_the_replicas_with_every_field) {
  start_admin();
  const auto r = admin_call(http::verb::get, "/admin/replicas");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  const json body = json::parse(r.body);
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 2u);
  EXPECT_EQ(body["data"][0], json::parse(R"({"id":0,"device":"cuda:0","workers":2,
      "state":"serving","num_running":3,"num_waiting":1,"kv_cache_usage":0.25})"));
  EXPECT_EQ(body["data"][1]["device"], "cpu");
  EXPECT_EQ(admin_.calls(), std::vector<std::string>{"list"});
}

TEST_F(admin_http_test, add_reaches_the_engine_and_answers_202_with_the_ids) {
  start_admin();
  auto r = admin_call(http::verb::post, "/admin/replicas", R"({"count":2,"device":"cuda:1"})");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"ids":[2,3]})"));
  // Both fields are optional; an empty body is no fields.
  r = admin_call(http::verb::post, "/admin/replicas", "{}");
  EXPECT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body)["ids"], json::array({4}));
  EXPECT_EQ(admin_call(http::verb::post, "/admin/replicas").status, 202);
  EXPECT_EQ(admin_.calls(), (std::vector<std::string>{"add 2 cuda:1", "add 1 ", "add 1 "}));
  const json list = json::parse(admin_call(http::verb::get, "/admin/replicas").body);
  EXPECT_EQ(list["data"][3]["state"], "starting");
}

TEST_F(admin_http_test, bad_add_bodies_are_400s_naming_the_field) {
  start_admin();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"count":0})", "count"},         {R"({"count":null})", "count"},
      {R"({"count":"x"})", "count"},       {R"({"count":17})", "count"},
      {R"({"count":-1})", "count"},        {R"({"count":2.5})", "count"},
      {R"({"count":true})", "count"},      {R"({"count":18446744073709551615})", "count"},
      {R"({"device":5})", "device"},       {R"({"device":"tpu"})", "device"},
      {R"({"device":"cuda:"})", "device"}, {R"({"cuont":2})", "cuont"}};
  for (const auto& [body, field] : bad) {
    const auto r = admin_call(http::verb::post, "/admin/replicas", body);
    expect_admin_error(r, 400, "invalid_request_error");
    EXPECT_EQ(json::parse(r.body)["error"]["param"], field) << body;
  }
  for (const std::string body : {"not json", "[1]", R"({"count":)"}) {
    expect_admin_error(admin_call(http::verb::post, "/admin/replicas", body), 400,
                       "invalid_request_error");
  }
  EXPECT_TRUE(admin_.calls().empty());
}

TEST_F(admin_http_test, drain_and_stop_reach_the_engine_with_the_id) {
  start_admin();
  auto r = admin_call(http::verb::post, "/admin/replicas/1/drain");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"id":1,"state":"draining"})"));
  r = admin_call(http::verb::delete_, "/admin/replicas/0");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body), json::parse(R"({"id":0,"state":"dead"})"));
  // The engine's refusals pass through with their status and message.
  r = admin_call(http::verb::post, "/admin/replicas/7/drain");
  expect_admin_error(r, 404, "invalid_request_error", "replica_not_found");
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "no replica 7");
  expect_admin_error(admin_call(http::verb::delete_, "/admin/replicas/9"), 404,
                     "invalid_request_error");
  r = admin_call(http::verb::post, "/admin/replicas/1/drain");
  expect_admin_error(r, 409, "invalid_request_error");
  EXPECT_EQ(json::parse(r.body)["error"]["message"], "replica 1 is draining");
  EXPECT_EQ(admin_.calls(),
            (std::vector<std::string>{"drain 1", "stop 0", "drain 7", "stop 9", "drain 1"}));
}

TEST_F(admin_http_test, an_id_that_is_not_a_number_in_range_is_a_400) {
  start_admin();
  for (const std::string id : {"abc", "-1", "+1", "1x", "%201", "2147483648", "99999999999999"}) {
    auto r = admin_call(http::verb::post, "/admin/replicas/" + id + "/drain");
    expect_admin_error(r, 400, "invalid_request_error");
    EXPECT_EQ(json::parse(r.body)["error"]["param"], "id") << id;
    expect_admin_error(admin_call(http::verb::delete_, "/admin/replicas/" + id), 400,
                       "invalid_request_error");
  }
  EXPECT_EQ(admin_call(http::verb::delete_, "/admin/replicas/2147483647").status, 404);
  EXPECT_EQ(admin_.calls(), std::vector<std::string>{"stop 2147483647"});
}

TEST_F(admin_http_test, a_wrong_method_is_a_405_with_allow) {
  start_admin();
  auto r = admin_call(http::verb::put, "/admin/replicas", "{}");
  expect_admin_error(r, 405, "invalid_request_error", "method_not_allowed");
  EXPECT_EQ(r.header("allow"), "GET, POST");
  r = admin_call(http::verb::get, "/admin/replicas/1/drain");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "POST");
  r = admin_call(http::verb::post, "/admin/replicas/1");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "DELETE");
  EXPECT_TRUE(admin_.calls().empty());
}

TEST_F(admin_http_test, a_server_without_an_admin_port_answers_503) {
  server_config config;
  config.admin_api_key = "adm-secret";
  start(config);
  expect_admin_error(admin_call(http::verb::get, "/admin/replicas"), 503, "server_error");
  expect_admin_error(get(port_, "/admin/replicas"), 401, "invalid_request_error");
}

TEST_F(admin_http_test, a_metrics_only_listener_has_no_admin_api) {
  server_config config;
  config.admin_api_key = "adm-secret";
  net::http_options options;
  options.metrics_only = true;
  start(config, options, &admin_);
  EXPECT_EQ(admin_call(http::verb::get, "/admin/replicas").status, 404);
  EXPECT_TRUE(admin_.calls().empty());
}

TEST_F(admin_http_test, requests_are_counted_by_route_not_by_id) {
  start_admin();
  admin_call(http::verb::post, "/admin/replicas/1/drain");
  admin_call(http::verb::delete_, "/admin/replicas/5?now=1");
  admin_call(http::verb::get, "/admin/replicas");
  // A request is counted just after its answer is written, so the next one may be counted
  // first: the routes are compared as a set.
  std::vector<std::string> counted = engine_.http_requests(3);
  std::sort(counted.begin(), counted.end());
  EXPECT_EQ(counted, (std::vector<std::string>{"/admin/replicas 200", "/admin/replicas/{id} 404",
                                               "/admin/replicas/{id}/drain 202"}));
}

}  // namespace
}  // namespace actorllm::testing
