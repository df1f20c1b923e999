// The Responses API with a store, without a socket: previous_response_id read as the
// conversation it continues, the stored objects read, listed and deleted through plan_request,
// and background calls run, finished, cancelled and aborted against the fake engine.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "api/admission.hpp"
#include "api/background_responses.hpp"
#include "api/request_plan.hpp"
#include "api/response_store.hpp"
#include "api/responses_api.hpp"
#include "api/responses_protocol.hpp"
#include "testing/fake_engine.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;

/// A finished response to `text` that answered `answer`.
stored_response finished(const std::string& id, const std::string& text, const std::string& answer,
                         const std::string& status = "completed") {
  return {
      {{"id", id},
       {"object", "response"},
       {"status", status},
       {"instructions", "the old rules"},
       {"output", json::array({{{"id", "msg_out"},
                                {"type", "message"},
                                {"role", "assistant"},
                                {"content", json::array({{{"type", "output_text"},
                                                          {"text", answer},
                                                          {"annotations", json::array()}}})}}})}},
      json::array({{{"id", "msg_in"},
                    {"type", "message"},
                    {"role", "user"},
                    {"content", json::array({{{"type", "input_text"}, {"text", text}}})}}})};
}

TEST(responses_protocol, previous_response_id_continues_the_stored_conversation) {
  response_store store({});
  ASSERT_TRUE(store.put(finished("resp_prev", "hi", "hello")));
  const response_lookup lookup = [&store](std::string_view id) { return store.get(id); };
  openai_request out;
  ASSERT_FALSE(parse_responses_request(
      R"({"input":"again","instructions":"new rules","previous_response_id":"resp_prev"})", out, {},
      {}, lookup));
  const json messages = json::parse(out.prompts[0].chat_json)["messages"];
  // The new instructions, the earlier turn, its answer, the new input; not the old rules.
  ASSERT_EQ(messages.size(), 4u) << messages;
  EXPECT_EQ(messages[0], json({{"role", "system"}, {"content", "new rules"}}));
  EXPECT_EQ(messages[1], json({{"role", "user"}, {"content", "hi"}}));
  EXPECT_EQ(messages[2], json({{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(messages[3], json({{"role", "user"}, {"content", "again"}}));
  // What is stored with the answer: every input item of the conversation, each with an id.
  const json& items = out.responses.input_items;
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0]["id"], "msg_in");
  EXPECT_EQ(items[1]["id"], "msg_out");
  EXPECT_TRUE(items[2]["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(items[2]["content"][0], json({{"type", "input_text"}, {"text", "again"}}));
  EXPECT_EQ(out.responses.previous_response_id, "resp_prev");
  EXPECT_TRUE(out.responses.store);
  EXPECT_EQ(out.responses.echo["instructions"], "new rules");
  EXPECT_EQ(out.responses.echo["previous_response_id"], "resp_prev");
}

TEST(responses_protocol, a_previous_response_that_cannot_be_continued_is_refused_by_name) {
  response_store store({});
  ASSERT_TRUE(store.put(finished("resp_running", "hi", "", "in_progress")));
  const response_lookup lookup = [&store](std::string_view id) { return store.get(id); };
  openai_request out;
  auto error = parse_responses_request(R"({"input":"x","previous_response_id":"resp_gone"})", out,
                                       {}, {}, lookup);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 404);
  EXPECT_EQ(error->type, "invalid_request_error");
  EXPECT_EQ(error->param, "previous_response_id");
  EXPECT_EQ(error->code, "previous_response_not_found");
  const json shape = json::parse(error_json(*error))["error"];
  EXPECT_EQ(shape["param"], "previous_response_id");
  EXPECT_EQ(shape["message"], "Previous response with id 'resp_gone' not found.");

  const std::pair<const char*, const char*> refusals[] = {
      {R"({"input":"x","previous_response_id":"../resp_1"})", "previous_response_id"},
      {R"({"input":"x","previous_response_id":7})", "previous_response_id"},
      {R"({"input":"x","previous_response_id":"resp_running"})", "previous_response_id"},
      {R"({"input":"x","background":true,"store":false})", "background"},
      {R"({"input":"x","background":"yes"})", "background"},
      {R"({"input":"x","background":true,"stream":true})", "stream"},
  };
  for (const auto& [body, param] : refusals) {
    error = parse_responses_request(body, out, {}, {}, lookup);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->status, 400) << body;
    EXPECT_EQ(error->param, param) << body << ": " << error->message;
  }
}

TEST(responses_protocol, input_is_kept_as_items_with_ids) {
  const auto text = input_items_of("hi");
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0]["type"], "message");
  EXPECT_EQ(text[0]["role"], "user");
  EXPECT_EQ(text[0]["content"][0]["text"], "hi");
  const auto items = input_items_of(nlohmann::ordered_json::parse(
      R"([{"role":"assistant","content":"earlier"},
          {"type":"function_call","call_id":"c","name":"f","arguments":"{}","id":"fc_given"},
          {"type":"function_call_output","call_id":"c","output":"1"}])"));
  EXPECT_EQ(json(items[0]["content"][0]), json({{"type", "output_text"}, {"text", "earlier"}}));
  EXPECT_EQ(items[1]["id"], "fc_given");
  EXPECT_TRUE(items[2]["id"].get<std::string>().starts_with("fco_"));
}

class stored_responses_test : public ::testing::Test {
 protected:
  void SetUp() override {
    head_.host = "127.0.0.1:8000";
    context_.responses = std::make_shared<response_store>(response_store_limits{});
    context_.background = std::make_shared<background_responses>(context_.responses);
  }
  request_plan plan(std::string_view method, std::string_view target) {
    request_head head = head_;
    head.method = method;
    head.target = target;
    return plan_request(context_, head);
  }
  json body(std::string_view method, std::string_view target, int status = 200) {
    const request_plan p = plan(method, target);
    EXPECT_EQ(p.reply.status, status) << method << " " << target << ": " << p.reply.body;
    return json::parse(p.reply.body);
  }
  /// POSTs a Responses body in the background; returns the answer's Response object.
  json post_background(const std::string& text) {
    openai_request call;
    model_info model;
    EXPECT_FALSE(admit_call(context_, api_kind::responses, text, call, model));
    const answer a = start_background_response(context_, std::move(call), model);
    EXPECT_EQ(a.status, 200) << a.body;
    return json::parse(a.body);
  }
  /// The stored status of `id` once it is no longer queued or running (up to 5 s).
  std::string final_status(const std::string& id) {
    for (int i = 0; i < 500; ++i) {
      const std::string status = body("GET", "/v1/responses/" + id)["status"];
      if (status != "queued" && status != "in_progress") return status;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "still running";
  }

  testing::fake_engine engine_;
  server_context context_{engine_, {}};
  request_head head_;
};

TEST_F(stored_responses_test, a_stored_response_is_read_listed_and_deleted) {
  stored_response entry = finished("resp_a", "hi", "hello");
  for (int i = 0; i < 4; ++i)
    entry.input_items.push_back({{"id", "msg_" + std::to_string(i)}, {"type", "message"}});
  ASSERT_TRUE(context_.responses->put(entry));  // items: msg_in, msg_0 .. msg_3

  EXPECT_EQ(body("GET", "/v1/responses/resp_a"), entry.response);
  json page = body("GET", "/v1/responses/resp_a/input_items");  // desc by default
  EXPECT_EQ(page["object"], "list");
  ASSERT_EQ(page["data"].size(), 5u);
  EXPECT_EQ(page["first_id"], "msg_3");
  EXPECT_EQ(page["last_id"], "msg_in");
  EXPECT_EQ(page["has_more"], false);
  page = body("GET", "/v1/responses/resp_a/input_items?order=asc&limit=2");
  EXPECT_EQ(page["first_id"], "msg_in");
  EXPECT_EQ(page["last_id"], "msg_0");
  EXPECT_EQ(page["has_more"], true);
  page = body("GET", "/v1/responses/resp_a/input_items?order=asc&limit=2&after=msg_0");
  EXPECT_EQ(page["first_id"], "msg_1");
  EXPECT_EQ(page["has_more"], true);
  page = body("GET", "/v1/responses/resp_a/input_items?order=asc&after=msg_3");
  EXPECT_EQ(page["data"].size(), 0u);
  EXPECT_EQ(page["first_id"], nullptr);
  EXPECT_EQ(page["has_more"], false);
  page = body("GET", "/v1/responses/resp_a/input_items?after=msg_2&limit=1");  // desc
  EXPECT_EQ(page["first_id"], "msg_1");
  for (const auto& [query, param] :
       std::initializer_list<std::pair<const char*, const char*>>{{"limit=0", "limit"},
                                                                  {"limit=101", "limit"},
                                                                  {"limit=x", "limit"},
                                                                  {"order=up", "order"},
                                                                  {"after=msg_none", "after"}})
    EXPECT_EQ(body("GET", std::string("/v1/responses/resp_a/input_items?") + query,
                   400)["error"]["param"],
              param)
        << query;

  // Not made in the background: nothing to cancel.
  EXPECT_EQ(plan("POST", "/v1/responses/resp_a/cancel").reply.status, 400);
  EXPECT_EQ(body("DELETE", "/v1/responses/resp_a"),
            json({{"id", "resp_a"}, {"object", "response"}, {"deleted", true}}));
  EXPECT_EQ(body("GET", "/v1/responses/resp_a", 404)["error"]["message"],
            "Response with id 'resp_a' not found.");
  EXPECT_EQ(plan("DELETE", "/v1/responses/resp_a").reply.status, 404);
  EXPECT_EQ(plan("GET", "/v1/responses/resp_a/input_items").reply.status, 404);
}

TEST_F(stored_responses_test, a_finished_call_is_kept_only_when_it_asks_to_be) {
  for (const bool store : {true, false}) {
    openai_request request;
    model_info model;
    const std::string text = std::string(R"({"input":"hi","max_output_tokens":2,"store":)") +
                             (store ? "true" : "false") + R"(,"metadata":{"k":"v"}})";
    ASSERT_FALSE(admit_call(context_, api_kind::responses, text, request, model));
    std::mutex mutex;
    std::vector<request_output> outputs;
    const auto started =
        start_call(context_, std::move(request), model, {}, [&](request_output out) {
          std::lock_guard lock(mutex);
          outputs.push_back(std::move(out));
        });
    for (int i = 0; i < 500 && !started->done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard lock(mutex);
      std::vector<std::string> none;
      for (const auto& out : outputs) started->add(out, none);
      outputs.clear();
    }
    ASSERT_TRUE(started->done());
    keep_response(context_, *started);
    const std::string id = started->options().id;
    if (!store) {
      EXPECT_EQ(plan("GET", "/v1/responses/" + id).reply.status, 404);
      continue;
    }
    const json kept = body("GET", "/v1/responses/" + id);
    EXPECT_EQ(kept, json::parse(started->response()));  // what the client was sent
    EXPECT_EQ(kept["store"], true);
    EXPECT_EQ(kept["metadata"], json({{"k", "v"}}));
    EXPECT_EQ(kept["output_text"], "w0 w1 ");
    EXPECT_EQ(body("GET", "/v1/responses/" + id + "/input_items")["data"][0]["content"][0]["text"],
              "hi");
  }
}

TEST_F(stored_responses_test, a_background_call_runs_on_and_ends_completed) {
  const json queued = post_background(R"({"input":"hi","background":true,"max_output_tokens":3})");
  EXPECT_EQ(queued["status"], "queued");
  EXPECT_EQ(queued["background"], true);
  EXPECT_EQ(queued["output"], json::array());
  const std::string id = queued["id"];
  EXPECT_EQ(final_status(id), "incomplete");  // max_output_tokens cut it
  const json done = body("GET", "/v1/responses/" + id);
  EXPECT_EQ(done["output_text"], "w0 w1 w2 ");
  EXPECT_EQ(done["usage"]["output_tokens"], 3);
  EXPECT_EQ(context_.background->num_running(), 0u);
  // Cancelling what has ended changes nothing.
  EXPECT_EQ(body("POST", "/v1/responses/" + id + "/cancel"), done);
}

TEST_F(stored_responses_test, cancel_aborts_the_engine_request_and_stores_it_cancelled) {
  engine_.token_delay = std::chrono::milliseconds(20);
  const json queued =
      post_background(R"({"input":"hi","background":true,"max_output_tokens":500})");
  const std::string id = queued["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(body("GET", "/v1/responses/" + id)["status"], "in_progress");
  const json cancelled = body("POST", "/v1/responses/" + id + "/cancel");
  EXPECT_EQ(cancelled["status"], "cancelled");
  EXPECT_NE(cancelled["output_text"], "");  // what it had generated
  EXPECT_TRUE(engine_.was_aborted(id));
  EXPECT_EQ(context_.background->num_running(), 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // a late delta changes nothing
  EXPECT_EQ(body("GET", "/v1/responses/" + id), cancelled);
}

TEST_F(stored_responses_test, a_stopping_server_fails_its_background_calls) {
  engine_.token_delay = std::chrono::milliseconds(20);
  const std::string id =
      post_background(R"({"input":"hi","background":true,"max_output_tokens":500})")["id"];
  context_.background->abort_all("the server stopped");
  EXPECT_TRUE(engine_.was_aborted(id));
  const json failed = body("GET", "/v1/responses/" + id);
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["error"]["message"], "the server stopped");
}

TEST_F(stored_responses_test, deleting_a_running_background_call_aborts_it) {
  engine_.token_delay = std::chrono::milliseconds(20);
  const std::string id =
      post_background(R"({"input":"hi","background":true,"max_output_tokens":500})")["id"];
  EXPECT_EQ(body("DELETE", "/v1/responses/" + id)["deleted"], true);
  EXPECT_TRUE(engine_.was_aborted(id));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(plan("GET", "/v1/responses/" + id).reply.status, 404);
}

}  // namespace
}  // namespace actorllm::api
