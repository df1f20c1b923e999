// The models' admin API without sockets: its routes, the load body, the name in the path, the
// list read back, and the port calls run_model_admin_call makes.
#include "api/admin_models_api.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace actorllm::api {
namespace {

using json = nlohmann::json;

TEST(admin_models_api, routes) {
  route r = find_route("GET", "/admin/models");
  EXPECT_EQ(r.target, endpoint::admin_models);
  EXPECT_TRUE(r.method_allowed);
  EXPECT_STREQ(r.allow, "GET, POST");
  EXPECT_STREQ(r.pattern, "");
  EXPECT_TRUE(find_route("POST", "/admin/models/?x=1").method_allowed);
  EXPECT_FALSE(find_route("DELETE", "/admin/models").method_allowed);

  r = find_route("DELETE", "/admin/models/qwen3:q8?now=1");
  EXPECT_EQ(r.target, endpoint::admin_model);
  EXPECT_TRUE(r.method_allowed);
  EXPECT_EQ(r.model_name, "qwen3:q8");
  EXPECT_STREQ(r.allow, "DELETE");
  EXPECT_STREQ(r.pattern, "/admin/models/{name}");
  EXPECT_FALSE(find_route("POST", "/admin/models/qwen").method_allowed);
  EXPECT_EQ(find_route("DELETE", "/admin/models/-x").model_name, "-x");  // judged after the key

  EXPECT_EQ(find_route("DELETE", "/admin/models/a/b").target, endpoint::unknown);
  EXPECT_EQ(find_route("DELETE", "/admin/models//").target, endpoint::unknown);
  EXPECT_EQ(find_route("GET", "/admin/modelsx").target, endpoint::unknown);
  EXPECT_TRUE(is_admin_path("/admin/models/qwen"));
}

TEST(admin_models_api, load_bodies) {
  load_model_request load;
  EXPECT_FALSE(parse_load_model(
      R"({"name":"qwen","path":"/models/qwen3","flags":{"max_model_len":512,"dtype":"float32"}})",
      load));
  EXPECT_EQ(load.name, "qwen");
  EXPECT_EQ(load.path, "/models/qwen3");
  EXPECT_EQ(json::parse(load.flags_json),
            json::parse(R"({"max_model_len":512,"dtype":"float32"})"));
  EXPECT_FALSE(parse_load_model(R"({"name":"Llama-3.2-1B_instruct:q8"})", load));
  EXPECT_EQ(load.name, "Llama-3.2-1B_instruct:q8");
  EXPECT_EQ(load.path, "");
  EXPECT_EQ(load.flags_json, "") << "no flags: none";
  EXPECT_FALSE(parse_load_model(R"({"name":"a","flags":{}})", load));
  EXPECT_EQ(load.flags_json, "{}");

  const auto param_of = [&](std::string_view body) {
    const auto error = parse_load_model(body, load);
    return error ? error->param : std::string("(accepted)");
  };
  EXPECT_EQ(param_of("{}"), "name");
  EXPECT_EQ(param_of(R"({"path":"/m"})"), "name");
  EXPECT_EQ(param_of(R"({"name":null})"), "name");
  EXPECT_EQ(param_of(R"({"name":7})"), "name");
  EXPECT_EQ(param_of(R"({"name":""})"), "name");
  EXPECT_EQ(param_of(R"({"name":"-dash"})"), "name");
  EXPECT_EQ(param_of(R"({"name":"a/b"})"), "name");
  EXPECT_EQ(param_of(R"({"name":"with space"})"), "name");
  EXPECT_EQ(param_of(R"({"name":")" + std::string(65, 'a') + R"("})"), "name");
  EXPECT_EQ(param_of(R"({"name":")" + std::string(64, 'a') + R"("})"), "(accepted)");
  EXPECT_EQ(param_of(R"({"name":"a","path":null})"), "path");
  EXPECT_EQ(param_of(R"({"name":"a","path":""})"), "path");
  EXPECT_EQ(param_of(R"({"name":"a","path":["/m"]})"), "path");
  EXPECT_EQ(param_of(R"({"name":"a","path":"/m\u0000/x"})"), "path");
  EXPECT_EQ(param_of(R"({"name":"a","flags":null})"), "flags");
  EXPECT_EQ(param_of(R"({"name":"a","flags":"{\"max_model_len\":512}"})"), "flags");
  EXPECT_EQ(param_of(R"({"name":"a","flags":[1]})"), "flags");
  EXPECT_EQ(param_of(R"({"name":"a","model":"b"})"), "model");
  EXPECT_EQ(param_of("nope"), "");
  EXPECT_EQ(param_of(""), "");
  EXPECT_EQ(param_of("[1]"), "");
  EXPECT_EQ(parse_load_model(R"({"name":1})", load)->status, 400);
  EXPECT_NE(parse_load_model(R"({"nmae":"a"})", load)->message.find("nmae"), std::string::npos);
}

TEST(admin_models_api, names_in_the_path) {
  EXPECT_FALSE(check_model_name("qwen3"));
  EXPECT_FALSE(check_model_name("a.b_c-d:e"));
  for (std::string_view bad : {"", "-x", ".x", "a b", "a%20b", "%2e%2e", "a\"b", "é"}) {
    const auto error = check_model_name(bad);
    ASSERT_TRUE(error) << bad;
    EXPECT_EQ(error->status, 400);
    EXPECT_EQ(error->param, "name");
  }
  EXPECT_TRUE(check_model_name(std::string(65, 'a')));
}

TEST(admin_models_api, the_model_list_reads_back) {
  const std::vector<model_view> models = {
      {"qwen", "/models/qwen3", "loaded", "", int64_t{5} << 30, int64_t{1} << 28, 3, 0.0},
      {"old", "/models/old", "failed", "config.json: no such file", 0, 0, 0, 12.5}};
  const std::string body = models_json(models);
  const json parsed = json::parse(body);
  EXPECT_EQ(parsed["object"], "list");
  EXPECT_EQ(parsed["data"][0], json::parse(R"({"id":"qwen","object":"model",
      "path":"/models/qwen3","state":"loaded","weight_bytes":5368709120,
      "kv_cache_bytes":268435456,"requests_in_flight":3,"idle_seconds":0.0})"))
      << "no error field without an error";
  EXPECT_EQ(parsed["data"][1]["error"], "config.json: no such file");
  const auto back = parse_models_json(body);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "qwen");
  EXPECT_EQ((*back)[0].path, "/models/qwen3");
  EXPECT_EQ((*back)[0].state, "loaded");
  EXPECT_EQ((*back)[0].error, "");
  EXPECT_EQ((*back)[0].weight_bytes, int64_t{5} << 30);
  EXPECT_EQ((*back)[0].kv_cache_bytes, int64_t{1} << 28);
  EXPECT_EQ((*back)[0].requests_in_flight, 3);
  EXPECT_EQ((*back)[1].error, "config.json: no such file");
  EXPECT_DOUBLE_EQ((*back)[1].idle_seconds, 12.5);
  EXPECT_TRUE(parse_models_json(models_json({}))->empty());
  EXPECT_FALSE(parse_models_json("{}"));
  EXPECT_FALSE(parse_models_json(R"({"data":[{"id":"a"}]})"));
  EXPECT_FALSE(parse_models_json(R"({"data":[{"id":1,"path":"","state":"loaded",
      "weight_bytes":0,"kv_cache_bytes":0,"requests_in_flight":0,"idle_seconds":0}]})"));
  EXPECT_FALSE(parse_models_json("<html>"));
}

TEST(admin_models_api, errors_keep_the_ports_status_and_words) {
  api_error e = model_admin_error({404, "no model 'x'", {}});
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.message, "no model 'x'");
  EXPECT_EQ(e.code, "model_not_found");
  e = model_admin_error({507, "the KV pools do not fit", {}});
  EXPECT_EQ(e.status, 507);
  EXPECT_EQ(e.type, "server_error");
  EXPECT_EQ(model_admin_error({409, "model 'x' is loading", {}}).code, "");
}

/// A model_admin_port that answers at once and remembers the last call.
struct recording_model_port : model_admin_port {
  std::string last;
  admin_outcome outcome{202, {}, {}};
  void models(std::function<void(std::vector<model_view>)> done) override {
    last = "list";
    done({{"qwen", "/m", "loaded", "", 1, 2, 0, 0.0}});
  }
  void load_model(load_model_request request, std::function<void(admin_outcome)> done) override {
    last = "load " + request.name + " " + request.path + " " + request.flags_json;
    done(outcome);
  }
  void unload_model(std::string name, std::function<void(admin_outcome)> done) override {
    last = "unload " + name;
    done(outcome);
  }
};

TEST(admin_models_api, calls_reach_the_port) {
  recording_model_port port;
  admin_answer answer;
  const auto keep = [&answer](admin_answer a) { answer = std::move(a); };
  run_model_admin_call(port, find_route("GET", "/admin/models"), "GET", "", keep);
  EXPECT_EQ(port.last, "list");
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(json::parse(answer.body)["data"][0]["id"], "qwen");

  run_model_admin_call(port, find_route("POST", "/admin/models"), "POST",
                       R"({"name":"b","path":"/p","flags":{"seed":1}})", keep);
  EXPECT_EQ(port.last, R"(load b /p {"seed":1})");
  EXPECT_EQ(answer.status, 202);
  EXPECT_EQ(json::parse(answer.body), json::parse(R"({"id":"b","state":"loading"})"));

  port.outcome.status = 200;  // any 2xx of the port is a 202: the change is under way
  run_model_admin_call(port, find_route("DELETE", "/admin/models/qwen"), "DELETE", "", keep);
  EXPECT_EQ(port.last, "unload qwen");
  EXPECT_EQ(answer.status, 202);
  EXPECT_EQ(json::parse(answer.body), json::parse(R"({"id":"qwen","state":"draining"})"));

  port.outcome = {404, "no model 'x'", {}};
  run_model_admin_call(port, find_route("DELETE", "/admin/models/x"), "DELETE", "", keep);
  EXPECT_EQ(answer.status, 404);
  EXPECT_EQ(json::parse(answer.body)["error"]["code"], "model_not_found");
  port.outcome = {507, "too big", {}};
  run_model_admin_call(port, find_route("POST", "/admin/models"), "POST", R"({"name":"x"})", keep);
  EXPECT_EQ(answer.status, 507);
  EXPECT_EQ(json::parse(answer.body)["error"]["message"], "too big");

  port.last.clear();
  run_model_admin_call(port, find_route("DELETE", "/admin/models/-x"), "DELETE", "", keep);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(json::parse(answer.body)["error"]["param"], "name");
  run_model_admin_call(port, find_route("POST", "/admin/models"), "POST", R"({"name":5})", keep);
  EXPECT_EQ(answer.status, 400);
  EXPECT_EQ(port.last, "");
}

}  // namespace
}  // namespace actorllm::api
