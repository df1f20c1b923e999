// /v1/responses: the request as the chat it means, and the answer as a Response object and
// its events, which fold into that object.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/openai_call.hpp"
#include "api/responses_protocol.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;

openai_request parse_responses_request(const std::string& body, const tool_settings& tools = {}) {
  openai_request out;
  auto error = parse_responses_request(body, out, {}, tools);
  EXPECT_FALSE(error) << body << " -> " << (error ? error->message : "");
  return out;
}

TEST(responses_protocol, input_items_become_the_chat_they_mean) {
  const auto r = parse_responses_request(R"({"model":"m","instructions":"be brief","input":[
      {"role":"developer","content":"rules"},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"}]},
      {"type":"function_call","call_id":"c1","name":"get","arguments":"{\"a\":1}"},
      {"type":"function_call","call_id":"c2","name":"get","arguments":"{}"},
      {"type":"function_call_output","call_id":"c1","output":"21"},
      {"type":"reasoning","summary":[]}],
      "max_output_tokens":7,"temperature":0.5,"tools":[{"type":"function","name":"get",
      "parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"get"}})");
  EXPECT_EQ(r.kind, api_kind::responses);
  ASSERT_EQ(r.prompts.size(), 1u);
  const auto& p = r.prompts[0];
  EXPECT_EQ(p.params.max_tokens, 7);
  EXPECT_FLOAT_EQ(p.params.temperature, 0.5f);
  EXPECT_EQ(r.tools.mode, tool_mode::forced_named);
  EXPECT_EQ(r.tools.forced_name, "get");
  const json chat = json::parse(p.chat_json);
  const json& m = chat["messages"];
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0], json({{"content", "be brief"}, {"role", "system"}}));
  EXPECT_EQ(m[1]["role"], "system");  // developer
  EXPECT_EQ(m[2]["content"], "weather?");
  ASSERT_EQ(m[3]["tool_calls"].size(), 2u);  // one assistant turn, two calls
  EXPECT_EQ(m[3]["tool_calls"][0]["function"]["arguments"], json({{"a", 1}}));
  EXPECT_EQ(m[4], json({{"content", "21"}, {"role", "tool"}, {"tool_call_id", "c1"}}));
  EXPECT_EQ(chat["tools"][0]["function"]["name"], "get");

  const auto plain =
      parse_responses_request(R"({"input":"hi","text":{"format":{"type":"json_schema",
      "name":"x","schema":{"type":"object"},"strict":true}}})");
  EXPECT_EQ(plain.prompts[0].params.structured.kind, output_constraint::json_schema);
  EXPECT_TRUE(plain.prompts[0].params.structured.compact_whitespace);
}

TEST(responses_protocol, input_images_become_image_parts_and_their_urls) {
  const auto r = parse_responses_request(R"({"input":[
      {"role":"user","content":[{"type":"input_text","text":"what is this?"},
        {"type":"input_image","image_url":"data:image/jpeg;base64,/9j/","detail":"high"}]},
      {"role":"assistant","content":[{"type":"output_text","text":"a cat"}]},
      {"role":"user","content":[{"type":"input_image","image_url":"https://h/b.png"}]}]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].image_urls,
            (std::vector<std::string>{"data:image/jpeg;base64,/9j/", "https://h/b.png"}));
  const json m = json::parse(r.prompts[0].chat_json)["messages"];
  EXPECT_EQ(m[0]["content"],
            json::parse(R"([{"type":"text","text":"what is this?"},{"type":"image"}])"));
  EXPECT_EQ(m[1]["content"], json::parse(R"([{"type":"text","text":"a cat"}])"));
  EXPECT_EQ(m[2]["content"], json::parse(R"([{"type":"image"}])"));
  // Without images, parts are text joined as before.
  const auto text = parse_responses_request(R"({"input":[{"role":"user","content":[
      {"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}]})");
  EXPECT_EQ(json::parse(text.prompts[0].chat_json)["messages"][0]["content"], "a\nb");
  EXPECT_TRUE(text.prompts[0].image_urls.empty());

  const std::pair<const char*, const char*> refused[] = {
      {R"({"type":"input_image","file_id":"file-1"})", "file inputs are not supported"},
      {R"({"type":"input_file","file_id":"file-1"})", "file inputs are not supported"},
      {R"({"type":"input_image"})", "needs image_url"},
      {R"({"type":"input_image","image_url":""})", "must not be empty"},
      {R"({"type":"input_image","image_url":"data:x","detail":"huge"})", "detail"},
      {R"({"type":"input_audio","input_audio":{}})", "'input_audio'"},
  };
  for (const auto& [part, words] : refused) {
    openai_request out;
    const auto error = parse_responses_request(
        std::string(R"({"input":[{"role":"user","content":[)") + part + "]}]}", out);
    ASSERT_TRUE(error) << part;
    EXPECT_EQ(error->status, 400);
    EXPECT_EQ(error->param, "input");
    EXPECT_NE(error->message.find(words), std::string::npos) << part << ": " << error->message;
  }
}

TEST(responses_protocol, refusals_name_this_apis_fields) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"input":"x","previous_response_id":"resp/1"})", "previous_response_id"},
      {R"({"model":"m"})", "input"},
      {R"({"input":[]})", "input"},
      {R"({"input":[{"type":"file_search_call"}]})", "input"},
      {R"({"input":[{"role":"robot","content":"x"}]})", "input"},
      {R"({"input":"x","tools":[{"type":"web_search"}]})", "tools"},
      {R"({"input":"x","max_output_tokens":0})", "max_output_tokens"},
      {R"({"input":"x","text":{"format":{"type":"yaml"}}})", "text"},
      {R"({"input":"x","store":"yes"})", "store"},
  };
  for (const auto& [body, param] : cases) {
    openai_request out;
    auto error = parse_responses_request(body, out);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->status, 400) << body;
    EXPECT_EQ(error->param, param) << body << ": " << error->message;
  }
}

request_output delta(const std::string& text, finish_reason finish = finish_reason::none) {
  request_output o;
  o.request_id = "e";
  o.text = text;
  o.finish = finish;
  o.num_prompt_tokens = 5;
  o.num_generated_tokens = 3;
  return o;
}

call_options responses_options(bool stream, tool_mode mode = tool_mode::none) {
  call_options o;
  o.kind = api_kind::responses;
  o.id = "resp_1";
  o.model = "m";
  o.stream = stream;
  o.chat.tools.mode = mode;
  o.chat.tools.forced_name = "get";
  return o;
}

TEST(responses_render, text_whole_and_streamed_events_fold_into_the_same_response) {
  openai_call whole(responses_options(false), {"e"});
  std::vector<std::string> none;
  whole.add(delta("Hello"), none);
  whole.add(delta(" world", finish_reason::length), none);
  const json response = json::parse(whole.response());
  EXPECT_EQ(response["object"], "response");
  EXPECT_EQ(response["status"], "incomplete");
  EXPECT_EQ(response["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(response["output_text"], "Hello world");
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "Hello world");
  EXPECT_EQ(response["usage"]["input_tokens"], 5);
  EXPECT_EQ(response["usage"]["output_tokens"], 3);

  openai_call streamed(responses_options(true), {"e"});
  std::vector<std::string> events;
  streamed.add(delta("Hello"), events);
  streamed.add(delta(" world", finish_reason::stop), events);
  std::vector<std::string> types;
  std::string text;
  int64_t sequence = 0;
  for (const auto& e : events) {
    const json event = json::parse(e);
    types.push_back(event["type"]);
    EXPECT_EQ(event["sequence_number"], sequence++);
    if (event["type"] == "response.output_text.delta") text += event["delta"].get<std::string>();
  }
  EXPECT_EQ(types,
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  EXPECT_EQ(text, "Hello world");
  const json completed = json::parse(events.back())["response"];
  EXPECT_EQ(completed["status"], "completed");
  EXPECT_EQ(completed["output_text"], "Hello world");
  EXPECT_TRUE(streamed.done());
}

TEST(responses_render, reasoning_is_its_own_item_before_the_message) {
  auto options = responses_options(true);
  options.chat.reasoning_parser = "qwen3";
  openai_call streamed(options, {"e"});
  std::vector<std::string> events;
  streamed.add(delta("<think>plan</thi"), events);
  streamed.add(delta("nk>Answer", finish_reason::stop), events);
  std::string reasoning, text;
  for (const auto& e : events) {
    const json event = json::parse(e);
    if (event["type"] == "response.reasoning_text.delta")
      reasoning += event["delta"].get<std::string>();
    if (event["type"] == "response.output_text.delta") text += event["delta"].get<std::string>();
  }
  EXPECT_EQ(reasoning, "plan");
  EXPECT_EQ(text, "Answer");
  const json output = json::parse(events.back())["response"]["output"];
  ASSERT_EQ(output.size(), 2u);
  EXPECT_EQ(output[0]["type"], "reasoning");
  EXPECT_EQ(output[0]["content"][0]["text"], "plan");
  EXPECT_EQ(output[1]["type"], "message");

  options.stream = false;
  openai_call whole(options, {"e"});
  std::vector<std::string> none;
  whole.add(delta("<think>plan</think>Answer", finish_reason::stop), none);
  const json response = json::parse(whole.response());
  EXPECT_EQ(response["output"][0]["type"], "reasoning");
  EXPECT_EQ(response["output_text"], "Answer");
}

TEST(responses_render, a_forced_function_is_a_function_call_item) {
  openai_call streamed(responses_options(true, tool_mode::forced_named), {"e"});
  std::vector<std::string> events;
  streamed.add(delta(R"({"a":)"), events);
  streamed.add(delta(R"( 1})", finish_reason::stop), events);
  std::string arguments;
  for (const auto& e : events) {
    const json event = json::parse(e);
    if (event["type"] == "response.function_call_arguments.delta")
      arguments += event["delta"].get<std::string>();
  }
  EXPECT_EQ(arguments, R"({"a": 1})");
  const json item = json::parse(events.back())["response"]["output"][0];
  EXPECT_EQ(item["type"], "function_call");
  EXPECT_EQ(item["name"], "get");
  EXPECT_EQ(item["arguments"], R"({"a": 1})");
  EXPECT_TRUE(item["call_id"].get<std::string>().starts_with("call_"));
}

}  // namespace
}  // namespace actorllm::api
