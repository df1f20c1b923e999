// The admin API without sockets: its routes, the keys, the bodies read and written, and the
// port calls run_admin_call makes.
#include "api/admin_api.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace actorllm::api {
namespace {

using json = nlohmann::json;

TEST(admin_api, routes) {
  route r = find_route("GET", "/admin/replicas");
  EXPECT_EQ(r.target, endpoint::admin_replicas);
  EXPECT_TRUE(r.method_allowed);
  EXPECT_STREQ(r.pattern, "");
  EXPECT_TRUE(find_route("POST", "/admin/replicas/?x=1").method_allowed);
  EXPECT_FALSE(find_route("DELETE", "/admin/replicas").method_allowed);

  r = find_route("POST", "/admin/replicas/12/drain");
  EXPECT_EQ(r.target, endpoint::admin_drain);
  EXPECT_TRUE(r.method_allowed);
  EXPECT_EQ(r.replica_id, "12");
  EXPECT_STREQ(r.pattern, "/admin/replicas/{id}/drain");

  r = find_route("DELETE", "/admin/replicas/x");
  EXPECT_EQ(r.target, endpoint::admin_replica);
  EXPECT_TRUE(r.method_allowed);
  EXPECT_EQ(r.replica_id, "x");  // judged by the handler, after the key
  EXPECT_STREQ(r.allow, "DELETE");

  EXPECT_EQ(find_route("GET", "/admin/replicas/1/2").target, endpoint::unknown);
  EXPECT_EQ(find_route("POST", "/admin/replicas//drain").target, endpoint::unknown);
  EXPECT_EQ(find_route("GET", "/admin").target, endpoint::unknown);
  EXPECT_TRUE(is_admin_path("/admin"));
  EXPECT_TRUE(is_admin_path("/admin/anything?q"));
  EXPECT_FALSE(is_admin_path("/administrator"));
  EXPECT_FALSE(is_admin_path("/v1/admin"));
}

TEST(admin_api, the_admin_key_is_its_own) {
  server_config config;
  EXPECT_FALSE(admin_authorized(config, "Bearer "));  // no key: no admin API at all
  EXPECT_FALSE(admin_authorized(config, ""));
  config.admin_api_key = "adm";
  config.api_key = "api";
  EXPECT_TRUE(admin_authorized(config, "Bearer adm"));
  EXPECT_TRUE(admin_authorized(config, "bearer adm"));
  EXPECT_FALSE(admin_authorized(config, "Bearer api"));
  EXPECT_FALSE(admin_authorized(config, "Bearer adm "));
  EXPECT_FALSE(admin_authorized(config, "Bearer ad"));
  EXPECT_FALSE(admin_authorized(config, "adm"));
  EXPECT_FALSE(authorized(config, "Bearer adm"));
  EXPECT_TRUE(authorized(config, "Bearer api"));
}

TEST(admin_api, add_bodies) {
  add_replicas_request add;
  EXPECT_FALSE(parse_add_replicas(R"({"count":16,"device":"cuda:3"})", add));
  EXPECT_EQ(add.count, 16);
  EXPECT_EQ(add.device, "cuda:3");
  EXPECT_FALSE(parse_add_replicas(R"({"device":"cuda"})", add)) << "any free CUDA device";
  EXPECT_EQ(add.device, "cuda");
  EXPECT_FALSE(parse_add_replicas(" \n", add));
  EXPECT_EQ(add.count, 1);
  EXPECT_EQ(add.device, "");

  const auto param_of = [&](std::string_view body) {
    const auto error = parse_add_replicas(body, add);
    return error ? error->param : std::string("(accepted)");
  };
  EXPECT_EQ(param_of(R"({"count":null,"device":"cpu"})"), "count");
  EXPECT_EQ(param_of(R"({"device":null})"), "device");
  EXPECT_EQ(param_of(R"({"count":0})"), "count");
  EXPECT_EQ(param_of(R"({"count":17})"), "count");
  EXPECT_EQ(param_of(R"({"count":"2"})"), "count");
  EXPECT_EQ(param_of(R"({"count":1e1})"), "count");
  EXPECT_EQ(param_of(R"({"count":-9223372036854775808})"), "count");
  EXPECT_EQ(param_of(R"({"device":"gpu"})"), "device");
  EXPECT_EQ(param_of(R"({"device":"cudа"})"), "device");  // a Cyrillic а
  EXPECT_EQ(param_of(R"({"device":"cuda:-1"})"), "device");
  EXPECT_EQ(param_of(R"({"device":"cuda:0x"})"), "device");
  EXPECT_EQ(param_of(R"({"device":""})"), "device");
  EXPECT_EQ(param_of(R"({"replicas":2})"), "replicas");
  EXPECT_EQ(param_of("nope"), "");
  EXPECT_EQ(parse_add_replicas("nope", add)->status, 400);
}

TEST(admin_api, replica_ids) {
  int32_t id = -1;
  EXPECT_FALSE(parse_replica_id("0", id));
  EXPECT_EQ(id, 0);
  EXPECT_FALSE(parse_replica_id("2147483647", id));
  EXPECT_EQ(id, 2147483647);
  for (std::string_view bad : {"", "-1", "+1", "1.0", "2147483648", "1 ", "x"}) {
    const auto error = parse_replica_id(bad, id);
    ASSERT_TRUE(error) << bad;
    EXPECT_EQ(error->status, 400);
    EXPECT_EQ(error->param, "id");
  }
}

TEST(admin_api, the_replica_list_reads_back) {
  const std::vector<replica_view> replicas = {{0, "cuda:0", 2, "serving", 3, 1, 0.5},
                                              {4, "remote:w1", 1, "draining", 0, 7, 0.125}};
  const std::string body = replicas_json(replicas);
  const json parsed = json::parse(body);
  EXPECT_EQ(parsed["object"], "list");
  EXPECT_EQ(parsed["data"][1], json::parse(R"({"id":4,"device":"remote:w1","workers":1,
      "state":"draining","num_running":0,"num_waiting":7,"kv_cache_usage":0.125})"));
  const auto back = parse_replicas_json(body);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].device, "remote:w1");
  EXPECT_EQ((*back)[1].num_waiting, 7);
  EXPECT_DOUBLE_EQ((*back)[0].kv_cache_usage, 0.5);
  EXPECT_TRUE(parse_replicas_json(replicas_json({}))->empty());
  EXPECT_FALSE(parse_replicas_json("{}"));
  EXPECT_FALSE(parse_replicas_json(R"({"data":[{"id":"0"}]})"));
  EXPECT_FALSE(parse_replicas_json("<html>"));
}

TEST(admin_api, errors_keep_the_engines_status_and_words) {
  api_error e = admin_error({409, "replica 3 is draining", {}});
  EXPECT_EQ(e.status, 409);
  EXPECT_EQ(e.message, "replica 3 is draining");
  EXPECT_EQ(e.type, "invalid_request_error");
  e = admin_error({507, "", {}});
  EXPECT_EQ(e.status, 507);
  EXPECT_EQ(e.type, "server_error");
  EXPECT_FALSE(e.message.empty());
  EXPECT_EQ(admin_error({404, "no replica 9", {}}).code, "replica_not_found");
  EXPECT_EQ(admin_error({0, "lost", {}}).status, 500);
  EXPECT_EQ(json::parse(error_json(e))["error"]["message"], e.message);
}

/// An admin_port that answers at once and remembers the last call.
struct recording_port : admin_port {
  std::string last;
  admin_outcome outcome{202, {}, {5, 6}};
  void replicas(std::function<void(std::vector<replica_view>)> done) override {
    last = "list";
    done({});
  }
  void add_replicas(int32_t count, std::string device,
                    std::function<void(admin_outcome)> done) override {
    last = "add " + std::to_string(count) + " " + device;
    done(outcome);
  }
  void drain_replica(int32_t id, std::function<void(admin_outcome)> done) override {
    last = "drain " + std::to_string(id);
    done(outcome);
  }
  void stop_replica(int32_t id, std::function<void(admin_outcome)> done) override {
    last = "stop " + std::to_string(id);
    done(outcome);
  }
};

TEST(admin_api, calls_reach_the_port) {
  recording_port port;
  admin_answer answer;
  const auto keep = [&answer](admin_answer a) { answer = std::move(a); };
  run_admin_call(port, find_route("GET", "/admin/replicas"), "GET", "", keep);
  EXPECT_EQ(port.last, "list");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(json::parse(answer.body), json::parse(R"({"object":"list","data":[]})"));

  run_admin_call(port, find_route("POST", "/admin/replicas"), "POST", R"({"count":2})", keep);
  EXPECT_EQ(port.last, "add 2 ");
  EXPECT_EQ(answer.status, 202);
  EXPECT_EQ(json::parse(answer.body), json::parse(R"({"ids":[5,6]})"));

  port.outcome.status = 200;  // any 2xx of the port is a 202: the change is under way
  run_admin_call(port, find_route("POST", "/admin/replicas/3/drain"), "POST", "", keep);
  EXPECT_EQ(port.last, "drain 3");
  EXPECT_EQ(answer.status, 202);
  EXPECT_EQ(json::parse(answer.body), json::parse(R"({"id":3,"state":"draining"})"));

  port.outcome = {409, "replica 4 is dead", {}};
  run_admin_call(port, find_route("DELETE", "/admin/replicas/4"), "DELETE", "", keep);
  EXPECT_EQ(port.last, "stop 4");
  EXPECT_EQ(answer.status, 409);
  EXPECT_EQ(json::parse(answer.body)["error"]["message"], "replica 4 is dead");

  port.last.clear();
  run_admin_call(port, find_route("DELETE", "/admin/replicas/four"), "DELETE", "", keep);
  EXPECT_EQ(answer.status, 400);
  run_admin_call(port, find_route("POST", "/admin/replicas"), "POST", R"({"count":0})", keep);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(port.last, "");
}

}  // namespace
}  // namespace actorllm::api
