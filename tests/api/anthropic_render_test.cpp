// /v1/messages answers: the message object, and the named events of a stream, which fold into
// the same message; and the plan of a request on the Messages API's paths (its key in
// x-api-key, its errors in Anthropic's shape).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/anthropic_protocol.hpp"
#include "api/openai_call.hpp"
#include "api/request_plan.hpp"
#include "testing/fake_engine.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;

/// A delta of the one choice of engine request "e", whose prompt has 5 tokens and which has
/// made 3 (cumulative, as the engine counts).
request_output delta(const std::string& text, finish_reason finish = finish_reason::none,
                     const std::string& stop = {}) {
  request_output out;
  out.request_id = "e";
  out.text = text;
  out.finish = finish;
  out.stop_reason = stop;
  out.num_prompt_tokens = 5;
  out.num_generated_tokens = 3;
  return out;
}

/// A Messages call of one prompt; its tools offer "get", which a forced mode forces.
call_options messages_options(bool stream, tool_mode mode = tool_mode::none) {
  call_options options;
  options.kind = api_kind::messages;
  options.id = "msg_1";
  options.model = "m";
  options.stream = stream;
  options.chat.tools.mode = mode;
  options.chat.tools.names = {"get"};
  options.chat.tools.forced_name = "get";
  return options;
}

/// A streamed event: its name and its data object.
struct event {
  std::string name;
  json data;
};

std::vector<event> events_of(const std::vector<std::string>& chunks) {
  std::vector<event> out;
  for (const auto& chunk : chunks) {
    const auto newline = chunk.find('\n');
    EXPECT_NE(newline, std::string::npos) << "an unnamed chunk: " << chunk;
    if (newline == std::string::npos) continue;
    out.push_back({chunk.substr(0, newline), json::parse(chunk.substr(newline + 1))});
    EXPECT_EQ(out.back().data["type"], out.back().name) << chunk;
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<event>& events) {
  std::vector<std::string> names;
  for (const auto& e : events) names.push_back(e.name);
  return names;
}

/// The message a stream's events make, folded as the SDK's MessageStream folds them.
json fold(const std::vector<event>& events) {
  json message;
  std::vector<std::string> partial_json;
  for (const auto& [name, data] : events) {
    const std::size_t index = data.value("index", std::size_t{0});
    if (name == "message_start") message = data["message"];
    if (name == "content_block_start") {
      EXPECT_EQ(index, message["content"].size());
      message["content"].push_back(data["content_block"]);
      partial_json.emplace_back();
    }
    if (name == "content_block_delta") {
      json& block = message["content"][index];
      const json& d = data["delta"];
      if (d["type"] == "text_delta")
        block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta")
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "input_json_delta")
        partial_json[index] += d["partial_json"].get<std::string>();
    }
    if (name == "content_block_stop" && !partial_json[index].empty())
      message["content"][index]["input"] = json::parse(partial_json[index]);
    if (name == "message_delta") {
      message["stop_reason"] = data["delta"]["stop_reason"];
      message["stop_sequence"] = data["delta"]["stop_sequence"];
      message["usage"]["output_tokens"] = data["usage"]["output_tokens"];
    }
  }
  return message;
}

TEST(anthropic_render, text_whole_and_streamed_events_fold_into_the_same_message) {
  openai_call whole(messages_options(false), {"e"});
  std::vector<std::string> none;
  whole.add(delta("Hello"), none);
  whole.add(delta(" world", finish_reason::length), none);
  EXPECT_TRUE(none.empty());
  const json message = json::parse(whole.response());
  EXPECT_EQ(message, json({{"id", "msg_1"},
                           {"type", "message"},
                           {"role", "assistant"},
                           {"model", "m"},
                           {"content", {{{"type", "text"}, {"text", "Hello world"}}}},
                           {"stop_reason", "max_tokens"},
                           {"stop_sequence", nullptr},
                           {"usage", {{"input_tokens", 5}, {"output_tokens", 3}}}}));

  openai_call streamed(messages_options(true), {"e"});
  std::vector<std::string> chunks;
  streamed.add(delta("Hello"), chunks);
  streamed.add(delta(" world", finish_reason::length), chunks);
  EXPECT_TRUE(streamed.done());
  EXPECT_FALSE(streamed.ends_with_done());
  const auto events = events_of(chunks);
  EXPECT_EQ(names_of(events),
            (std::vector<std::string>{"message_start", "ping", "content_block_start",
                                      "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}));
  const json start = events[0].data["message"];
  EXPECT_EQ(start["content"], json::array());
  EXPECT_TRUE(start["stop_reason"].is_null());
  EXPECT_EQ(start["usage"]["input_tokens"], 5);
  EXPECT_EQ(events[2].data["content_block"], json({{"type", "text"}, {"text", ""}}));
  EXPECT_EQ(events[3].data["delta"], json({{"type", "text_delta"}, {"text", "Hello"}}));
  EXPECT_EQ(fold(events), message);
}

TEST(anthropic_render, stop_reason_names_what_ended_the_message) {
  const std::pair<request_output, json> cases[] = {
      {delta("a", finish_reason::stop), {"end_turn", nullptr}},
      {delta("a", finish_reason::stop, "END"), {"stop_sequence", "END"}},
      {delta("a", finish_reason::length), {"max_tokens", nullptr}},
  };
  for (const auto& [out, expected] : cases) {
    for (bool stream : {false, true}) {
      openai_call call(messages_options(stream), {"e"});
      std::vector<std::string> chunks;
      call.add(out, chunks);
      const json message = stream ? fold(events_of(chunks)) : json::parse(call.response());
      EXPECT_EQ(message["stop_reason"], expected[0]) << stream;
      EXPECT_EQ(message["stop_sequence"], expected[1]) << stream;
    }
  }
}

TEST(anthropic_render, a_forced_tool_is_a_tool_use_block_with_its_input) {
  for (tool_mode mode : {tool_mode::forced_named, tool_mode::forced_required}) {
    const std::vector<std::string> pieces =
        mode == tool_mode::forced_named
            ? std::vector<std::string>{R"({"a":)", R"( 1})"}
            : std::vector<std::string>{R"([{"name": "get", "parameters": {"a":)", R"( 1}}])"};
    openai_call whole(messages_options(false, mode), {"e"});
    openai_call streamed(messages_options(true, mode), {"e"});
    std::vector<std::string> none, chunks;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const auto finish = i + 1 == pieces.size() ? finish_reason::stop : finish_reason::none;
      whole.add(delta(pieces[i], finish), none);
      streamed.add(delta(pieces[i], finish), chunks);
    }
    const json message = json::parse(whole.response());
    ASSERT_EQ(message["content"].size(), 1u) << message.dump();
    const json& block = message["content"][0];
    EXPECT_EQ(block["type"], "tool_use");
    EXPECT_EQ(block["name"], "get");
    EXPECT_EQ(block["input"], json({{"a", 1}}));
    EXPECT_TRUE(block["id"].get<std::string>().starts_with("toolu_"));
    EXPECT_EQ(message["stop_reason"], "tool_use");

    const auto events = events_of(chunks);
    const json folded = fold(events);
    EXPECT_EQ(folded["stop_reason"], "tool_use");
    ASSERT_EQ(folded["content"].size(), 1u) << folded.dump();
    EXPECT_EQ(folded["content"][0]["name"], "get");
    EXPECT_EQ(folded["content"][0]["input"], json({{"a", 1}}));
    EXPECT_EQ(events[2].data["content_block"]["input"], json::object());
    EXPECT_EQ(events[3].data["delta"]["type"], "input_json_delta");
  }
}

TEST(anthropic_render, thinking_blocks_come_first_and_only_when_asked) {
  for (bool thinking : {true, false}) {
    auto options = messages_options(true);
    options.chat.reasoning_parser = "qwen3";
    options.thinking = thinking;
    openai_call streamed(options, {"e"});
    std::vector<std::string> chunks;
    streamed.add(delta("<think>plan</thi"), chunks);
    streamed.add(delta("nk>Answer", finish_reason::stop), chunks);
    const json folded = fold(events_of(chunks));
    options.stream = false;
    openai_call whole(options, {"e"});
    std::vector<std::string> none;
    whole.add(delta("<think>plan</think>Answer", finish_reason::stop), none);
    const json message = json::parse(whole.response());
    const json answer = {{"type", "text"}, {"text", "Answer"}};
    const json expected =
        thinking
            ? json::array({{{"type", "thinking"}, {"thinking", "plan"}, {"signature", ""}}, answer})
            : json::array({answer});
    EXPECT_EQ(message["content"], expected) << thinking;
    EXPECT_EQ(folded["content"], expected) << thinking;
  }
}

TEST(anthropic_render, a_failure_mid_stream_is_an_error_event) {
  openai_call streamed(messages_options(true), {"e"});
  std::vector<std::string> chunks;
  streamed.add(delta("Hello"), chunks);
  request_output failure = delta("");
  failure.finish = finish_reason::error;
  failure.error = "the server is shutting down";
  failure.error_status = 503;
  streamed.add(failure, chunks);
  EXPECT_TRUE(streamed.failed());
  const auto events = events_of(chunks);
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(events.back().data,
            json({{"type", "error"},
                  {"error",
                   {{"type", "overloaded_error"}, {"message", "the server is shutting down"}}}}));
}

class anthropic_plan_test : public ::testing::Test {
 protected:
  void SetUp() override {
    head_.host = "127.0.0.1:8000";
    head_.has_body = true;
    head_.content_type = "application/json";
    context_.config.api_key = "s3cret";
  }
  request_plan plan(std::string_view method, std::string_view target) {
    request_head head = head_;
    head.method = method;
    head.target = target;
    return plan_request(context_, head);
  }

  testing::fake_engine engine_;
  server_context context_{engine_, {}};
  request_head head_;
};

TEST_F(anthropic_plan_test, the_key_may_come_in_x_api_key_and_errors_are_anthropics) {
  request_plan p = plan("POST", "/v1/messages");
  EXPECT_EQ(p.errors, error_style::anthropic);
  EXPECT_EQ(p.reply.status, 401);
  EXPECT_EQ(
      json::parse(p.reply.body),
      json({{"type", "error"},
            {"error",
             {{"type", "authentication_error"},
              {"message", "invalid or missing API key (Authorization: Bearer, or x-api-key)"}}}}));
  head_.api_key = "wrong";
  EXPECT_EQ(plan("POST", "/v1/messages").reply.status, 401);
  head_.api_key = "s3cret";
  p = plan("POST", "/v1/messages");
  EXPECT_EQ(p.kind, work::completion);
  EXPECT_EQ(p.call_kind, api_kind::messages);
  p = plan("POST", "/v1/messages/count_tokens");
  EXPECT_EQ(p.kind, work::count_tokens);
  EXPECT_EQ(p.errors, error_style::anthropic);
  EXPECT_EQ(plan("GET", "/v1/models").reply.status, 200);  // the key opens the other paths too
  p = plan("GET", "/v1/messages");
  EXPECT_EQ(p.reply.status, 405);
  EXPECT_EQ(json::parse(p.reply.body)["type"], "error");
  // The OpenAI paths keep OpenAI's errors, and /admin takes no x-api-key.
  p = plan("POST", "/v1/chat/completions?x=1");
  EXPECT_EQ(p.errors, error_style::openai);
  context_.config.admin_api_key = "s3cret";
  EXPECT_EQ(plan("GET", "/admin/replicas").reply.status, 401);
}

TEST(anthropic_errors, error_answers_in_each_style) {
  const api_error overloaded = engine_error("busy", 503);
  const answer openai = error_answer(overloaded);
  EXPECT_EQ(openai.status, 503);
  EXPECT_EQ(json::parse(openai.body)["error"]["type"], "server_error");
  const answer anthropic = error_answer(overloaded, error_style::anthropic);
  EXPECT_EQ(anthropic.status, 529);
  EXPECT_EQ(json::parse(anthropic.body)["error"]["type"], "overloaded_error");
  EXPECT_EQ(error_style_of("/v1/messages"), error_style::anthropic);
  EXPECT_EQ(error_style_of("/v1/messages/count_tokens/"), error_style::anthropic);
  EXPECT_EQ(error_style_of("/v1/messages/other"), error_style::openai);
  EXPECT_EQ(error_style_of("/v1/completions"), error_style::openai);
}

}  // namespace
}  // namespace actorllm::api
