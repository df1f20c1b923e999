// api::plan_request without a socket: the refusals (Host, key, path, method, body type,
// Origin), what --metrics-port, --disable-web-ui and --admin-api-key take away, the small
// endpoints' answers, and the work each other endpoint asks the transport to start.
#include "api/request_plan.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/fake_engine.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

/// An admin port that is never called: plan_request only asks whether there is one.
struct unused_admin : admin_port {
  void replicas(std::function<void(std::vector<replica_view>)>) override {}
  void add_replicas(int32_t, std::string, std::function<void(admin_outcome)>) override {}
  void drain_replica(int32_t, std::function<void(admin_outcome)>) override {}
  void stop_replica(int32_t, std::function<void(admin_outcome)>) override {}
};

/// A model admin port that is never called either.
struct unused_model_admin : model_admin_port {
  void models(std::function<void(std::vector<model_view>)>) override {}
  void load_model(load_model_request, std::function<void(admin_outcome)>) override {}
  void unload_model(std::string, std::function<void(admin_outcome)>) override {}
};

class request_plan_test : public ::testing::Test {
 protected:
  void SetUp() override { head_.host = "127.0.0.1:8000"; }
  request_plan plan(std::string_view method, std::string_view target) {
    request_head head = head_;
    head.method = method;
    head.target = target;
    return plan_request(context_, head);
  }
  /// A POST of a JSON body.
  request_plan post(std::string_view target) {
    head_.has_body = true;
    head_.content_type = "application/json";
    return plan("POST", target);
  }

  testing::fake_engine engine_;
  unused_admin admin_;
  unused_model_admin models_admin_;
  server_context context_{engine_, {}};
  request_head head_;
};

/// The "code" of an answer's error body.
std::string error_code(const request_plan& p) {
  return json::parse(p.reply.body)["error"]["code"].get<std::string>();
}

std::string header(const answer& a, std::string_view name) {
  for (const auto& [key, value] : a.headers)
    if (key == name) return value;
  return {};
}

TEST_F(request_plan_test, the_api_key_is_asked_before_the_path_is_judged) {
  context_.config.api_key = "s3cret";
  for (const char* target : {"/v1/models", "/nowhere", "/v1/chat/completions"}) {
    const request_plan p = plan("GET", target);
    EXPECT_EQ(p.kind, work::none) << target;
    EXPECT_EQ(p.reply.status, 401) << target;
    EXPECT_EQ(error_code(p), "invalid_api_key") << target;
  }
  head_.authorization = "Bearer wrong";
  EXPECT_EQ(plan("GET", "/v1/models").reply.status, 401);
  head_.authorization = "bearer s3cret";  // the scheme in any case
  EXPECT_EQ(plan("GET", "/v1/models").reply.status, 200);
  EXPECT_EQ(plan("GET", "/nowhere").reply.status, 404);
}

TEST_F(request_plan_test, probes_and_the_playground_need_no_key) {
  context_.config.api_key = "s3cret";
  for (const char* target : {"/health", "/ping", "/version", "/metrics", "/", "/ui/app.js"})
    EXPECT_NE(plan("GET", target).reply.status, 401) << target;
}

TEST_F(request_plan_test, a_websocket_may_carry_its_key_as_a_subprotocol) {
  context_.config.api_key = "s3cret";
  head_.websocket_upgrade = true;
  EXPECT_EQ(plan("GET", "/v1/ws").reply.status, 401);
  head_.websocket_protocols = "actorllm, bearer.s3cret";
  EXPECT_EQ(plan("GET", "/v1/ws").kind, work::websocket);
}

TEST_F(request_plan_test, a_host_that_is_not_ours_is_403_and_ends_the_connection) {
  head_.host = "evil.example:8000";
  const request_plan p = plan("GET", "/health");
  EXPECT_EQ(p.kind, work::none);
  EXPECT_EQ(p.reply.status, 403);
  EXPECT_EQ(error_code(p), "host_not_allowed");
  EXPECT_TRUE(p.reply.close);
  context_.config.allowed_hosts = {"evil.example"};
  EXPECT_EQ(plan("GET", "/health").reply.status, 200);
}

TEST_F(request_plan_test, http_1_1_needs_a_host_and_http_1_0_does_not) {
  head_.host.reset();
  const request_plan p = plan("GET", "/health");
  EXPECT_EQ(p.reply.status, 400);
  EXPECT_TRUE(p.reply.close);
  head_.http_1_1 = false;
  EXPECT_EQ(plan("GET", "/health").reply.status, 200);
}

TEST_F(request_plan_test, a_post_from_a_foreign_origin_is_403) {
  head_.origin = "http://evil.example";
  const request_plan p = post("/v1/completions");
  EXPECT_EQ(p.reply.status, 403);
  EXPECT_EQ(error_code(p), "origin_not_allowed");
  EXPECT_FALSE(p.reply.close);
  EXPECT_EQ(plan("GET", "/v1/models").reply.status, 200);  // only a POST is asked
  head_.origin = "http://127.0.0.1:8000";                  // the server's own page
  EXPECT_EQ(post("/v1/completions").kind, work::completion);
  head_.origin = "http://evil.example";
  context_.config.allowed_origins = {"http://evil.example"};
  EXPECT_EQ(post("/v1/completions").kind, work::completion);
  EXPECT_EQ(post("/v1/completions").cors_origin, "http://evil.example");
}

TEST_F(request_plan_test, a_post_body_that_is_not_json_is_415) {
  head_.has_body = true;
  head_.content_type = "text/plain";
  request_plan p = plan("POST", "/v1/completions");
  EXPECT_EQ(p.reply.status, 415);
  EXPECT_EQ(error_code(p), "unsupported_media_type");
  head_.content_type = "";
  EXPECT_EQ(plan("POST", "/v1/completions").reply.status, 415);
  head_.content_type = "application/vnd.api+json; charset=utf-8";
  EXPECT_EQ(plan("POST", "/v1/completions").kind, work::completion);
  head_.has_body = false;  // nothing to read: no type needed
  head_.content_type = "";
  EXPECT_EQ(plan("POST", "/v1/completions").kind, work::completion);
}

TEST_F(request_plan_test, an_unknown_path_is_404_and_a_wrong_method_405_with_allow) {
  request_plan p = plan("GET", "/v2/nothing");
  EXPECT_EQ(p.reply.status, 404);
  EXPECT_EQ(p.route.target, endpoint::unknown);
  p = plan("DELETE", "/v1/models");
  EXPECT_EQ(p.reply.status, 405);
  EXPECT_EQ(error_code(p), "method_not_allowed");
  EXPECT_EQ(header(p.reply, "Allow"), "GET, HEAD");
  EXPECT_EQ(header(plan("GET", "/v1/completions").reply, "Allow"), "POST");
}

TEST_F(request_plan_test, a_preflight_is_204_with_the_cors_headers_for_an_allowed_origin) {
  request_plan p = plan("OPTIONS", "/v1/completions");
  EXPECT_EQ(p.reply.status, 204);
  EXPECT_EQ(p.reply.content_type, "");
  EXPECT_EQ(header(p.reply, "Allow"), "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(header(p.reply, "Access-Control-Allow-Methods"), "");
  context_.config.allowed_origins = {"*"};
  head_.origin = "http://page.example";
  head_.requested_headers = "Authorization";
  p = plan("OPTIONS", "/v1/completions");
  EXPECT_EQ(p.cors_origin, "*");
  EXPECT_EQ(header(p.reply, "Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(header(p.reply, "Access-Control-Allow-Headers"), "Authorization");
  EXPECT_EQ(header(p.reply, "Access-Control-Max-Age"), "600");
}

TEST_F(request_plan_test, a_metrics_only_listener_serves_metrics_alone) {
  context_.metrics_only = true;
  context_.config.admin_api_key = "admin";
  head_.authorization = "Bearer admin";
  const request_plan metrics = plan("GET", "/metrics");
  EXPECT_EQ(metrics.reply.status, 200);
  EXPECT_EQ(metrics.reply.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics.reply.body, engine_.metrics_text());
  for (const char* target : {"/health", "/v1/models", "/", "/admin/replicas"})
    EXPECT_EQ(plan("GET", target).reply.status, 404) << target;
  EXPECT_EQ(post("/v1/completions").reply.status, 404);
}

TEST_F(request_plan_test, disable_web_ui_takes_the_playground_away) {
  request_plan p = plan("GET", "/");
  EXPECT_EQ(p.kind, work::web_asset);
  EXPECT_EQ(p.route.asset, "index.html");
  p = plan("GET", "/ui/app.js");
  EXPECT_EQ(p.kind, work::web_asset);
  EXPECT_EQ(p.route.asset, "app.js");
  EXPECT_STREQ(p.route.pattern, "/ui/{name}");
  context_.config.enable_web_ui = false;
  EXPECT_EQ(plan("GET", "/").reply.status, 404);
  EXPECT_EQ(plan("GET", "/ui/app.js").reply.status, 404);
}

TEST_F(request_plan_test, admin_exists_only_with_an_admin_key_and_takes_no_other) {
  context_.config.api_key = "user";
  head_.authorization = "Bearer user";
  EXPECT_EQ(plan("GET", "/admin/replicas").reply.status, 404);  // no --admin-api-key
  EXPECT_EQ(plan("GET", "/admin").reply.status, 404);
  context_.config.admin_api_key = "admin";
  request_plan p = plan("GET", "/admin/replicas");
  EXPECT_EQ(p.reply.status, 401);  // the API key opens nothing here
  EXPECT_NE(p.reply.body.find("admin API key"), std::string::npos);
  head_.authorization = "Bearer admin";
  EXPECT_EQ(plan("GET", "/v1/models").reply.status, 401);  // nor the admin key there
  p = plan("GET", "/admin/replicas");
  EXPECT_EQ(p.reply.status, 503);  // a server without an admin port
  EXPECT_EQ(error_code(p), "admin_unavailable");
  context_.admin = &admin_;
  p = plan("GET", "/admin/replicas");
  EXPECT_EQ(p.kind, work::admin);
  EXPECT_EQ(p.route.target, endpoint::admin_replicas);
  p = plan("POST", "/admin/replicas/3/drain");
  EXPECT_EQ(p.kind, work::admin);
  EXPECT_EQ(p.route.replica_id, "3");
  EXPECT_STREQ(p.route.pattern, "/admin/replicas/{id}/drain");
  EXPECT_EQ(plan("DELETE", "/admin/replicas/3").kind, work::admin);
  EXPECT_EQ(plan("GET", "/admin/nothing").reply.status, 404);
}

TEST_F(request_plan_test, admin_models_needs_a_server_of_several_models) {
  EXPECT_EQ(plan("GET", "/admin/models").reply.status, 404);  // no --admin-api-key
  context_.config.admin_api_key = "admin";
  EXPECT_EQ(plan("GET", "/admin/models").reply.status, 401);
  EXPECT_EQ(plan("DELETE", "/admin/models/qwen").reply.status, 401);
  head_.authorization = "Bearer admin";
  context_.admin = &admin_;  // replicas are no models
  request_plan p = plan("GET", "/admin/models");
  EXPECT_EQ(p.reply.status, 501);
  EXPECT_EQ(error_code(p), "models_admin_unavailable");
  EXPECT_NE(p.reply.body.find("--model NAME=PATH"), std::string::npos) << p.reply.body;
  EXPECT_EQ(plan("DELETE", "/admin/models/qwen").reply.status, 501);
  context_.models_admin = &models_admin_;
  p = post("/admin/models");
  EXPECT_EQ(p.kind, work::model_admin);
  EXPECT_EQ(p.route.target, endpoint::admin_models);
  p = plan("DELETE", "/admin/models/qwen");
  EXPECT_EQ(p.kind, work::model_admin);
  EXPECT_EQ(p.route.model_name, "qwen");
  EXPECT_STREQ(p.route.pattern, "/admin/models/{name}");
  p = plan("PUT", "/admin/models");
  EXPECT_EQ(p.reply.status, 405);
  EXPECT_EQ(header(p.reply, "Allow"), "GET, POST");
  EXPECT_EQ(plan("GET", "/admin/models/a/b").reply.status, 404);
  context_.admin = nullptr;  // and models are no replicas
  EXPECT_EQ(plan("GET", "/admin/replicas").reply.status, 503);
  EXPECT_EQ(plan("GET", "/admin/models").kind, work::model_admin);
}

TEST_F(request_plan_test, health_is_200_while_the_engine_serves_and_503_when_not) {
  request_plan p = plan("GET", "/health");
  EXPECT_EQ(p.kind, work::none);
  EXPECT_EQ(p.reply.status, 200);
  EXPECT_EQ(p.reply.content_type, "text/plain");
  EXPECT_EQ(plan("POST", "/ping").reply.status, 200);
  engine_.alive = false;
  p = plan("GET", "/health");
  EXPECT_EQ(p.reply.status, 503);
  EXPECT_EQ(plan("GET", "/ping").reply.status, 503);
}

TEST_F(request_plan_test, the_small_endpoints_are_answered_here) {
  request_plan p = plan("GET", "/version");
  EXPECT_EQ(p.reply.status, 200);
  EXPECT_TRUE(json::parse(p.reply.body).contains("version"));
  p = plan("GET", "/v1/models");
  EXPECT_EQ(json::parse(p.reply.body)["data"][0]["id"], "fake-model");
  p = plan("GET", "/v1/models/fake-model");
  EXPECT_EQ(p.reply.status, 200);
  EXPECT_EQ(json::parse(p.reply.body)["id"], "fake-model");
  p = plan("GET", "/v1/models/other");
  EXPECT_EQ(p.reply.status, 404);
  EXPECT_EQ(error_code(p), "model_not_found");
  p = plan("GET", "/v1/engine/stats");
  EXPECT_EQ(p.reply.status, 200);
  EXPECT_EQ(p.reply.body, engine_.engine_stats_json());
}

TEST_F(request_plan_test, stored_responses_are_answered_here_behind_the_key) {
  context_.config.api_key = "s3cret";
  EXPECT_EQ(plan("GET", "/v1/responses/resp_1").reply.status, 401);
  head_.authorization = "Bearer s3cret";
  // No store on this context: every id is unknown, whatever the method the path takes.
  request_plan p = plan("GET", "/v1/responses/resp_1");
  EXPECT_EQ(p.kind, work::none);
  EXPECT_EQ(p.reply.status, 404);
  EXPECT_EQ(p.route.target, endpoint::response);
  EXPECT_EQ(p.route.response_id, "resp_1");
  EXPECT_STREQ(p.route.pattern, "/v1/responses/{id}");
  EXPECT_EQ(plan("DELETE", "/v1/responses/resp_1").reply.status, 404);
  p = plan("GET", "/v1/responses/resp_1/input_items?limit=5");
  EXPECT_EQ(p.reply.status, 404);
  EXPECT_EQ(p.route.target, endpoint::response_input_items);
  EXPECT_STREQ(p.route.pattern, "/v1/responses/{id}/input_items");
  p = plan("POST", "/v1/responses/resp_1/cancel");
  EXPECT_EQ(p.reply.status, 404);
  EXPECT_EQ(p.route.target, endpoint::response_cancel);
  EXPECT_STREQ(p.route.pattern, "/v1/responses/{id}/cancel");
  // Wrong methods and paths below an id that name nothing.
  p = plan("POST", "/v1/responses/resp_1");
  EXPECT_EQ(p.reply.status, 405);
  EXPECT_EQ(header(p.reply, "Allow"), "GET, HEAD, DELETE");
  EXPECT_EQ(plan("GET", "/v1/responses/resp_1/cancel").reply.status, 405);
  for (const char* target : {"/v1/responses/resp_1/other", "/v1/responses//cancel",
                             "/v1/responses/resp_1/input_items/x"})
    EXPECT_EQ(plan("GET", target).route.target, endpoint::unknown) << target;
  // A malformed id (a path through it, say) is a 404 like any unknown one.
  EXPECT_EQ(plan("GET", "/v1/responses/..%2F..%2Fetc").reply.status, 404);
}

TEST_F(request_plan_test, every_other_endpoint_names_the_work_to_start) {
  struct expected {
    const char* target;
    work kind;
  };
  for (const auto& [target, kind] :
       {expected{"/v1/completions", work::completion},
        expected{"/v1/chat/completions", work::completion},
        expected{"/v1/responses", work::completion}, expected{"/v1/embeddings", work::embeddings},
        expected{"/tokenize", work::tokenize}, expected{"/detokenize", work::detokenize},
        expected{"/v1/load_lora_adapter", work::lora_update},
        expected{"/v1/unload_lora_adapter", work::lora_update}}) {
    const request_plan p = post(target);
    EXPECT_EQ(p.kind, kind) << target;
    EXPECT_EQ(p.reply.body, "") << target;
  }
  EXPECT_EQ(post("/v1/completions").call_kind, api_kind::completion);
  EXPECT_EQ(post("/v1/chat/completions").call_kind, api_kind::chat);
  EXPECT_EQ(post("/v1/responses/").call_kind, api_kind::responses);  // one trailing slash
  EXPECT_EQ(post("/v1/load_lora_adapter").route.target, endpoint::load_lora_adapter);
  EXPECT_EQ(post("/v1/unload_lora_adapter").route.target, endpoint::unload_lora_adapter);
}

TEST_F(request_plan_test, the_websocket_needs_an_upgrade_from_an_allowed_origin) {
  request_plan p = plan("GET", "/v1/ws");
  EXPECT_EQ(p.reply.status, 400);
  head_.websocket_upgrade = true;
  EXPECT_EQ(plan("GET", "/v1/ws").kind, work::websocket);
  head_.origin = "http://evil.example";
  p = plan("GET", "/v1/ws");
  EXPECT_EQ(p.reply.status, 403);
  EXPECT_EQ(error_code(p), "origin_not_allowed");
  head_.origin = "https://127.0.0.1:8000";
  EXPECT_EQ(plan("GET", "/v1/ws").kind, work::websocket);
}

TEST_F(request_plan_test, an_error_answer_is_the_error_object_with_its_status) {
  const answer a = error_answer(not_found("gone"));
  EXPECT_EQ(a.status, 404);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(json::parse(a.body)["error"]["message"], "gone");
}

}  // namespace
}  // namespace actorllm::api
