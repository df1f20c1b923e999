// /v1/messages and /v1/messages/count_tokens: the body as the chat it means, the refusals that
// name this API's fields, and Anthropic's error objects and statuses.
#include "api/anthropic_protocol.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace actorllm::api {
namespace {

using nlohmann::json;

const tool_settings hermes{true, "hermes"};

/// The request `body` means; a refusal fails the test (and leaves no prompts).
openai_request parse_messages(const std::string& body, const tool_settings& tools = {}) {
  openai_request out;
  if (auto error = parse_messages_request(body, out, {}, tools)) {
    ADD_FAILURE() << body << " -> " << error->message;
    out.prompts.clear();
  }
  return out;
}

TEST(anthropic_protocol, a_conversation_becomes_the_chat_it_means) {
  const auto r = parse_messages(R"({"model":"m","max_tokens":7,"metadata":{"user_id":"u"},
      "system":[{"type":"text","text":"rules"},{"type":"text","text":"more"}],
      "messages":[
        {"role":"user","content":"weather?"},
        {"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},
          {"type":"text","text":"checking"},
          {"type":"tool_use","id":"toolu_1","name":"get","input":{"city":"Rome"}},
          {"type":"tool_use","id":"toolu_2","name":"get","input":{}}]},
        {"role":"user","content":[
          {"type":"tool_result","tool_use_id":"toolu_1","content":"21"},
          {"type":"tool_result","tool_use_id":"toolu_2","is_error":true,
           "content":[{"type":"text","text":"no"}]},
          {"type":"text","text":"and"},{"type":"text","text":"so?"}]}],
      "stop_sequences":["END"],"temperature":0.5,"top_p":0.9,"top_k":5,"stream":true,
      "tools":[{"name":"get","description":"d","input_schema":{"type":"object"}}],
      "tool_choice":{"type":"none"}})");
  EXPECT_EQ(r.kind, api_kind::messages);
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_FALSE(r.thinking);
  EXPECT_EQ(r.tools.mode, tool_mode::none);
  ASSERT_EQ(r.prompts.size(), 1u);
  const auto& p = r.prompts[0];
  EXPECT_EQ(p.params.max_tokens, 7);
  EXPECT_FLOAT_EQ(p.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.params.top_p, 0.9f);
  EXPECT_EQ(p.params.top_k, 5);
  EXPECT_EQ(p.params.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(p.add_generation_prompt);
  const json chat = json::parse(p.chat_json);
  const json& m = chat["messages"];
  ASSERT_EQ(m.size(), 6u) << m.dump();
  EXPECT_EQ(m[0], json({{"role", "system"}, {"content", "rules\nmore"}}));
  EXPECT_EQ(m[1], json({{"role", "user"}, {"content", "weather?"}}));
  EXPECT_EQ(m[2]["content"], "checking");
  EXPECT_EQ(m[2]["reasoning_content"], "hm");
  ASSERT_EQ(m[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], json({{"city", "Rome"}}));
  EXPECT_EQ(m[3], json({{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "21"}}));
  EXPECT_EQ(m[4]["content"], "no");
  EXPECT_EQ(m[5], json({{"role", "user"}, {"content", "and\nso?"}}));
  EXPECT_EQ(chat["tools"][0]["function"]["name"], "get");
  EXPECT_EQ(chat["tools"][0]["function"]["parameters"], json({{"type", "object"}}));
  EXPECT_EQ(chat["enable_thinking"], false);
}

TEST(anthropic_protocol, tool_choice_maps_onto_chats_modes) {
  const std::string head = R"({"max_tokens":9,"messages":[{"role":"user","content":"x"}],
      "tools":[{"name":"a","input_schema":{"type":"object"}},
               {"type":"custom","name":"b","input_schema":{"type":"object",
                "properties":{"z":{"type":"string"},"y":{"type":"integer"}}}}])";
  EXPECT_EQ(parse_messages(head + "}", hermes).tools.mode, tool_mode::parse);
  EXPECT_EQ(parse_messages(head + R"(,"tool_choice":{"type":"auto"}})", hermes).tools.mode,
            tool_mode::parse);
  const auto any =
      parse_messages(head + R"(,"tool_choice":{"type":"any","disable_parallel_tool_use":true}})");
  EXPECT_EQ(any.tools.mode, tool_mode::forced_required);
  EXPECT_FALSE(any.tools.parallel);
  const auto named = parse_messages(head + R"(,"tool_choice":{"type":"tool","name":"b"}})");
  EXPECT_EQ(named.tools.mode, tool_mode::forced_named);
  EXPECT_EQ(named.tools.forced_name, "b");
  // The forced call's schema keeps the client's property order.
  EXPECT_EQ(named.prompts[0].params.structured.source,
            R"({"type":"object","properties":{"z":{"type":"string"},"y":{"type":"integer"}}})");
  EXPECT_EQ(parse_messages(head + R"(,"tool_choice":{"type":"none"}})").tools.mode,
            tool_mode::none);
}

TEST(anthropic_protocol, thinking_asks_the_template_and_the_answer_for_reasoning) {
  const auto r = parse_messages(R"({"max_tokens":2048,"messages":[{"role":"user","content":"x"}],
      "thinking":{"type":"enabled","budget_tokens":1024}})");
  EXPECT_TRUE(r.thinking);
  EXPECT_EQ(json::parse(r.prompts[0].chat_json)["enable_thinking"], true);
  EXPECT_FALSE(parse_messages(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
      "thinking":{"type":"disabled"}})")
                   .thinking);
}

TEST(anthropic_protocol, refusals_name_this_apis_fields) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"messages":[{"role":"user","content":"x"}]})", "max_tokens"},
      {R"({"max_tokens":0,"messages":[{"role":"user","content":"x"}]})", "max_tokens"},
      {R"({"max_tokens":5})", "messages"},
      {R"({"max_tokens":5,"messages":[]})", "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"system","content":"x"}]})", "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":7}]})", "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},
          {"role":"assistant","content":"pre"}]})",
       "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image",
          "source":{"type":"base64","media_type":"image/png","data":""}}]}]})",
       "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]}]})",
       "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result"}]}]})",
       "messages"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"system":[{"type":"image"}]})",
       "system"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
          "tools":[{"type":"web_search_20250305","name":"web_search"}]})",
       "tools"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"a"}]})",
       "tools"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
          "tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"tool"}})",
       "tool_choice"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
          "tools":[{"name":"a","input_schema":{}}],"tool_choice":"any"})",
       "tool_choice"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],
          "tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"auto"}})",
       "tool_choice"},  // without --enable-auto-tool-choice
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"temperature":1.5})",
       "temperature"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"stop_sequences":"x"})",
       "stop_sequences"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"stop_sequences":[1]})",
       "stop_sequences"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"metadata":"u"})", "metadata"},
      {R"({"max_tokens":5000,"messages":[{"role":"user","content":"x"}],
          "thinking":{"type":"enabled","budget_tokens":100}})",
       "thinking"},
      {R"({"max_tokens":1500,"messages":[{"role":"user","content":"x"}],
          "thinking":{"type":"enabled","budget_tokens":2000}})",
       "thinking"},
      {R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"thinking":{"type":"on"}})",
       "thinking"},
  };
  for (const auto& [body, param] : cases) {
    openai_request out;
    auto error = parse_messages_request(body, out);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->status, 400) << body;
    EXPECT_EQ(error->param, param) << body << ": " << error->message;
  }
  openai_request out;
  auto document = parse_messages_request(
      R"({"max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]}]})", out);
  ASSERT_TRUE(document);
  EXPECT_NE(document->message.find("'document'"), std::string::npos) << document->message;
}

TEST(anthropic_protocol, image_blocks_become_image_parts_and_their_urls) {
  const auto r = parse_messages(R"({"max_tokens":5,"system":"rules","messages":[
      {"role":"user","content":[{"type":"text","text":"compare"},
        {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0K"}},
        {"type":"image","source":{"type":"url","url":"https://example.com/b.jpg"}}]},
      {"role":"assistant","content":"a plot and a cat"},
      {"role":"user","content":"which is older?"}]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].image_urls, (std::vector<std::string>{"data:image/png;base64,iVBORw0K",
                                                               "https://example.com/b.jpg"}));
  const json m = json::parse(r.prompts[0].chat_json)["messages"];
  EXPECT_EQ(m[0]["content"], "rules");
  EXPECT_EQ(m[1]["content"], json::parse(R"([{"type":"text","text":"compare"},{"type":"image"},
                                             {"type":"image"}])"));
  EXPECT_EQ(m[2]["content"], "a plot and a cat");
  // Text as a string is a list of one text block: with images, a list of one text part.
  EXPECT_EQ(m[3]["content"], json::parse(R"([{"type":"text","text":"which is older?"}])"));

  generate_request counted;
  ASSERT_FALSE(parse_count_tokens_request(R"({"messages":[{"role":"user","content":[
      {"type":"image","source":{"type":"url","url":"https://example.com/b.jpg"}}]}]})",
                                          counted));
  EXPECT_EQ(counted.image_urls.size(), 1u);
}

TEST(anthropic_protocol, a_bad_image_source_is_refused_naming_the_block) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"image"})", "messages.2.content.1: an image block needs a source"},
      {R"({"type":"image","source":"x"})", "messages.2.content.1: an image block needs a source"},
      {R"({"type":"image","source":{"type":"base64","media_type":"image/tiff","data":"AA"}})",
       "messages.2.content.1.source.media_type"},
      {R"({"type":"image","source":{"type":"base64","media_type":"image/png"}})",
       "messages.2.content.1.source.data"},
      {R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":""}})",
       "messages.2.content.1.source.data"},
      {R"({"type":"image","source":{"type":"url","url":""}})", "messages.2.content.1.source.url"},
      {R"({"type":"image","source":{"type":"file","file_id":"f"}})",
       "file inputs are not supported"},
      {R"({"type":"image","source":{"type":"url","url":"gopher://h/a.png"}})", "image_url.url"},
  };
  for (const auto& [block, words] : cases) {
    const std::string body =
        std::string(R"({"max_tokens":5,"messages":[{"role":"user","content":"hi"},
        {"role":"assistant","content":"yes?"},{"role":"user","content":[
        {"type":"text","text":"look"},)") +
        block + "]}]}";
    openai_request out;
    auto error = parse_messages_request(body, out);
    ASSERT_TRUE(error) << block;
    EXPECT_EQ(error->status, 400);
    EXPECT_EQ(error->param, "messages");
    EXPECT_EQ(anthropic_error_object(*error)["error"]["type"], "invalid_request_error");
    EXPECT_NE(error->message.find(words), std::string::npos) << block << ": " << error->message;
  }
  // Anthropic takes no images in system, nor in an assistant turn.
  const char* image = R"({"type":"image","source":{"type":"url","url":"https://h/a.png"}})";
  openai_request out;
  auto error = parse_messages_request(
      std::string(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}],"system":[)") +
          image + "]}",
      out);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->param, "system");
  EXPECT_NE(error->message.find("not allowed in system"), std::string::npos) << error->message;
  error = parse_messages_request(
      std::string(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"},
          {"role":"assistant","content":[)") +
          image + R"(]},{"role":"user","content":"y"}]})",
      out);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("not allowed"), std::string::npos) << error->message;
}

TEST(anthropic_protocol, sizes_past_the_bounds_are_refused) {
  json blocks = json::array();
  for (std::size_t i = 0; i <= max_content_blocks; ++i)
    blocks.push_back({{"type", "text"}, {"text", "x"}});
  json body = {{"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", blocks}}}}};
  openai_request out;
  auto error = parse_messages_request(body.dump(), out);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->param, "messages");
  body = {
      {"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"system", blocks}};
  ASSERT_TRUE(error = parse_messages_request(body.dump(), out));
  EXPECT_EQ(error->param, "system");
  body = {{"max_tokens", 5},
          {"messages", {{{"role", "user"}, {"content", "x"}}}},
          {"stop_sequences", json::array()}};
  for (std::size_t i = 0; i <= max_stop_sequences; ++i) body["stop_sequences"].push_back("s");
  ASSERT_TRUE(error = parse_messages_request(body.dump(), out));
  EXPECT_EQ(error->param, "stop_sequences");
}

TEST(anthropic_protocol, count_tokens_builds_the_prompt_messages_would) {
  const std::string conversation = R"("system":"rules","messages":[{"role":"user","content":"x"}],
      "tools":[{"name":"a","input_schema":{"type":"object"}}],
      "thinking":{"type":"enabled","budget_tokens":1024})";
  generate_request counted;
  ASSERT_FALSE(parse_count_tokens_request("{\"model\":\"m\"," + conversation + "}", counted));
  const auto sent = parse_messages(R"({"model":"m","max_tokens":2000,"temperature":0,)" +
                                   conversation + R"(,"tool_choice":{"type":"any"}})");
  ASSERT_EQ(sent.prompts.size(), 1u);
  EXPECT_EQ(counted.kind, prompt_kind::chat);
  EXPECT_EQ(counted.chat_json, sent.prompts[0].chat_json);
  EXPECT_EQ(counted.add_generation_prompt, sent.prompts[0].add_generation_prompt);
  EXPECT_EQ(counted.add_special_tokens, sent.prompts[0].add_special_tokens);
  EXPECT_EQ(counted.model, "m");
  EXPECT_EQ(counted.params.max_tokens, -1);  // no answer to fit beside the prompt
  EXPECT_FALSE(counted.params.structured.active());
  // Tools without a tool choice need no tool-call parser to be counted.
  ASSERT_FALSE(parse_count_tokens_request(
      R"({"messages":[{"role":"user","content":"x"}],"tools":[{"name":"a","input_schema":{}}]})",
      counted));
  auto error = parse_count_tokens_request(
      R"({"messages":[{"role":"user","content":[{"type":"image"}]}]})", counted);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->param, "messages");
}

TEST(anthropic_errors, each_status_has_anthropics_type) {
  const std::pair<int, const char*> cases[] = {
      {400, "invalid_request_error"},
      {401, "authentication_error"},
      {403, "permission_error"},
      {404, "not_found_error"},
      {413, "request_too_large"},
      {429, "rate_limit_error"},
      {500, "api_error"},
      {503, "overloaded_error"},
      {415, "invalid_request_error"},
  };
  for (const auto& [status, type] : cases) {
    const json object = anthropic_error_object({status, "why", "x", "p", "c"});
    EXPECT_EQ(object, json({{"type", "error"}, {"error", {{"type", type}, {"message", "why"}}}}))
        << status;
  }
  EXPECT_EQ(anthropic_status(503), 529);
  EXPECT_EQ(anthropic_status(400), 400);
  EXPECT_EQ(anthropic_status(500), 500);
}

}  // namespace
}  // namespace actorllm::api
