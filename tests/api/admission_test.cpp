// What gets in before the engine sees it: a call's body read for its kind, then the model,
// the engine's life and the waiting queue; an embeddings body against the room in the queue;
// a /tokenize body against the served model.
#include "api/admission.hpp"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "testing/fake_engine.hpp"

namespace actorllm::api {
namespace {

class admission_test : public ::testing::Test {
 protected:
  testing::fake_engine engine_;
  server_context context_{engine_, {}};
  openai_request call_;
  model_info model_;
};

TEST_F(admission_test, a_call_is_read_as_its_kind_and_admitted) {
  ASSERT_FALSE(admit_call(context_, api_kind::completion, R"({"prompt":"hi"})", call_, model_));
  EXPECT_EQ(call_.kind, api_kind::completion);
  EXPECT_EQ(model_.name, "fake-model");
  ASSERT_FALSE(admit_call(context_, api_kind::responses, R"({"input":"hi"})", call_, model_));
  EXPECT_EQ(call_.kind, api_kind::responses);
  // A Responses body is not a chat body, nor the other way round.
  EXPECT_EQ(admit_call(context_, api_kind::chat, R"({"input":"hi"})", call_, model_)->param,
            "messages");
}

TEST_F(admission_test, a_call_is_refused_for_its_model_the_engine_or_the_queue) {
  auto error =
      admit_call(context_, api_kind::completion, R"({"model":"x","prompt":"hi"})", call_, model_);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 404);
  EXPECT_EQ(error->code, "model_not_found");
  engine_.alive = false;
  EXPECT_EQ(admit_call(context_, api_kind::completion, R"({"prompt":"hi"})", call_, model_)->status,
            503);
  engine_.alive = true;
  context_.max_waiting_requests = 2;
  engine_.waiting = 2;
  EXPECT_EQ(admit_call(context_, api_kind::completion, R"({"prompt":"hi"})", call_, model_)->status,
            503);
}

// --task embed: a pooling model generates nothing; each generation API is a 400 naming it.
TEST_F(admission_test, a_pooling_model_refuses_every_generation_api) {
  engine_.embeddings = true;
  const std::pair<api_kind, const char*> calls[] = {
      {api_kind::completion, R"({"prompt":"hi"})"},
      {api_kind::chat, R"({"messages":[{"role":"user","content":"hi"}]})"},
      {api_kind::responses, R"({"input":"hi"})"}};
  for (const auto& [kind, body] : calls) {
    const auto error = admit_call(context_, kind, body, call_, model_);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->status, 400);
    EXPECT_NE(error->message.find("--task embed"), std::string::npos) << error->message;
  }
  EXPECT_NE(admit_call(context_, api_kind::chat, calls[1].second, call_, model_)
                ->message.find("Chat Completions API"),
            std::string::npos);
}

TEST_F(admission_test, embeddings_need_room_for_every_input) {
  engine_.embeddings = true;
  embeddings_request request;
  ASSERT_FALSE(admit_embeddings(context_, R"({"input":["a","b"]})", request, model_));
  EXPECT_EQ(request.inputs.size(), 2u);
  EXPECT_TRUE(model_.embeddings);
  context_.max_waiting_requests = 3;
  engine_.waiting = 1;
  EXPECT_FALSE(admit_embeddings(context_, R"({"input":["a","b"]})", request, model_));
  engine_.waiting = 2;
  EXPECT_EQ(admit_embeddings(context_, R"({"input":["a","b"]})", request, model_)->status, 503);
}

TEST_F(admission_test, tokenize_names_the_served_model) {
  generate_request request;
  ASSERT_FALSE(admit_tokenize(context_, R"({"prompt":"hi"})", request));
  EXPECT_EQ(request.model, "fake-model");
  ASSERT_FALSE(admit_tokenize(context_, R"({"model":"/models/fake","prompt":"hi"})", request));
  EXPECT_EQ(request.model, "fake-model");  // the path it answers to, sent by its served name
  EXPECT_EQ(admit_tokenize(context_, R"({"model":"other","prompt":"hi"})", request)->code,
            "model_not_found");
}

TEST_F(admission_test, a_model_s_own_parsers_read_its_calls_else_the_server_s) {
  const char* body = R"({"messages":[{"role":"user","content":"hi"}],
      "tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto"})";
  auto error = admit_call(context_, api_kind::chat, body, call_, model_);
  ASSERT_TRUE(error);  // the server runs no tool-call parser
  EXPECT_EQ(error->param, "tool_choice");
  engine_.parsers = output_parsers{true, "hermes", "qwen3"};
  EXPECT_FALSE(admit_call(context_, api_kind::chat, body, call_, model_));
  EXPECT_EQ(context_.parsers_of(model_).reasoning_parser, "qwen3");
}

// --limit-mm-per-prompt and --max-image-bytes, in each API's own field name.
TEST_F(admission_test, images_past_the_servers_bounds_are_refused_in_every_api) {
  context_.config.max_images_per_prompt = 1;
  const std::string image = R"({"type":"image_url","image_url":"data:image/png;base64,AAAA"})";
  const std::string two = "[" + image + "," + image + "]";
  const std::tuple<api_kind, std::string, const char*> calls[] = {
      {api_kind::chat, R"({"messages":[{"role":"user","content":)" + two + "}]}", "messages"},
      {api_kind::responses,
       R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:a"},
           {"type":"input_image","image_url":"data:b"}]}]})",
       "input"},
      {api_kind::messages,
       R"({"max_tokens":5,"messages":[{"role":"user","content":[
           {"type":"image","source":{"type":"url","url":"https://h/a.png"}},
           {"type":"image","source":{"type":"url","url":"https://h/b.png"}}]}]})",
       "messages"}};
  for (const auto& [kind, body, param] : calls) {
    const auto error = admit_call(context_, kind, body, call_, model_);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->status, 400);
    EXPECT_EQ(error->param, param);
    EXPECT_NE(error->message.find("At most 1 image(s)"), std::string::npos) << error->message;
  }
  const std::string one = R"({"messages":[{"role":"user","content":[)" + image + "]}]}";
  ASSERT_FALSE(admit_call(context_, api_kind::chat, one, call_, model_));
  EXPECT_EQ(call_.prompts[0].image_urls.size(), 1u);
  generate_request tokenized;
  EXPECT_FALSE(admit_tokenize(context_, one, tokenized));
  EXPECT_EQ(
      admit_tokenize(context_, R"({"messages":[{"role":"user","content":)" + two + "}]}", tokenized)
          ->status,
      400);

  context_.config.media.max_bytes = 2;  // "AAAA" decodes to 3 bytes: its URL is still short
  EXPECT_FALSE(admit_call(context_, api_kind::chat, one, call_, model_));
  const std::string long_url =
      R"({"type":"image_url","image_url":"data:image/png;base64,)" + std::string(400, 'A') + "\"}";
  const auto error =
      admit_call(context_, api_kind::chat,
                 R"({"messages":[{"role":"user","content":[)" + long_url + "]}]}", call_, model_);
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("--max-image-bytes"), std::string::npos) << error->message;
}

TEST(model_named_in, reads_the_top_level_model_wherever_it_stands) {
  EXPECT_EQ(model_named_in(R"({"model":"b","prompt":"Once upon","max_tokens":5})"), "b");
  EXPECT_EQ(model_named_in(R"({"prompt":"x","model":"b","stop":["y"]})"), "b");
  EXPECT_EQ(model_named_in(R"({"messages":[{"role":"user","content":"hi","model":"no"}],"n":1})"),
            "");
  EXPECT_EQ(model_named_in(R"({"model":7,"prompt":"x"})"), "");
  EXPECT_EQ(model_named_in("not json"), "");
}

}  // namespace
}  // namespace actorllm::api
