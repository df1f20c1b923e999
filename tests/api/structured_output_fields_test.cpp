// The request fields that ask for structured output: each spelling maps to one constraint,
// a schema keeps the client's property order, and wrong shapes are 400s naming the field.
#include "api/structured_output_fields.hpp"

#include <gtest/gtest.h>

#include <tuple>

namespace actorllm::api {
namespace {

structured_output parse_constraint(const std::string& body, api_kind kind = api_kind::completion) {
  openai_request out;
  auto error = parse_openai_request(body, kind, out);
  EXPECT_FALSE(error) << body << " -> " << (error ? error->message : "");
  if (out.prompts.empty()) return {};
  return out.prompts[0].params.structured;
}

api_error constraint_error(const std::string& body, api_kind kind = api_kind::completion) {
  openai_request out;
  auto error = parse_openai_request(body, kind, out);
  EXPECT_TRUE(error) << body;
  return error.value_or(api_error{});
}

TEST(structured_output_fields, openai_response_format) {
  EXPECT_FALSE(parse_constraint(R"({"prompt":"x","response_format":{"type":"text"}})").active());
  auto any = parse_constraint(R"({"prompt":"x","response_format":{"type":"json_object"}})");
  EXPECT_EQ(any.kind, output_constraint::json_object);
  EXPECT_EQ(any.field, "response_format");

  auto schema = parse_constraint(
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema",)"
      R"("json_schema":{"name":"person","strict":true,"schema":{"type":"object",)"
      R"("properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}}}}})",
      api_kind::chat);
  EXPECT_EQ(schema.kind, output_constraint::json_schema);
  EXPECT_TRUE(schema.compact_whitespace);
  // The client's order, not nlohmann::json's sorted one: the model writes zeta first.
  EXPECT_EQ(
      schema.source,
      R"({"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}}})");
  auto loose = parse_constraint(
      R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":{}}}})");
  EXPECT_FALSE(loose.compact_whitespace);
}

TEST(structured_output_fields, vllm_structured_outputs_object) {
  auto json = parse_constraint(
      R"({"prompt":"x","structured_outputs":{"json":{"b":1,"a":2},"disable_any_whitespace":true}})");
  EXPECT_EQ(json.kind, output_constraint::json_schema);
  EXPECT_EQ(json.source, R"({"b":1,"a":2})");
  EXPECT_TRUE(json.compact_whitespace);
  auto text_schema =
      parse_constraint(R"({"prompt":"x","structured_outputs":{"json":"{\"type\":\"string\"}"}})");
  EXPECT_EQ(text_schema.source, R"({"type":"string"})");
  auto regex = parse_constraint(R"({"prompt":"x","structured_outputs":{"regex":"[a-z]+"}})");
  EXPECT_EQ(regex.kind, output_constraint::regex);
  EXPECT_EQ(regex.source, "[a-z]+");
  auto choice = parse_constraint(R"({"prompt":"x","structured_outputs":{"choice":["yes","no"]}})");
  EXPECT_EQ(choice.kind, output_constraint::choice);
  EXPECT_EQ(choice.choices, (std::vector<std::string>{"yes", "no"}));
  auto grammar =
      parse_constraint(R"({"prompt":"x","structured_outputs":{"grammar":"root ::= \"a\""}})");
  EXPECT_EQ(grammar.kind, output_constraint::grammar);
  auto object = parse_constraint(R"({"prompt":"x","structured_outputs":{"json_object":true}})");
  EXPECT_EQ(object.kind, output_constraint::json_object);
  EXPECT_EQ(object.field, "structured_outputs");
}

TEST(structured_output_fields, older_guided_fields) {
  auto json = parse_constraint(R"({"prompt":"x","guided_json":{"type":"object"}})");
  EXPECT_EQ(json.kind, output_constraint::json_schema);
  EXPECT_EQ(json.field, "guided_json");
  EXPECT_EQ(parse_constraint(R"({"prompt":"x","guided_regex":"a+"})").kind,
            output_constraint::regex);
  EXPECT_EQ(parse_constraint(R"({"prompt":"x","guided_choice":["a"]})").kind,
            output_constraint::choice);
  EXPECT_EQ(parse_constraint(R"({"prompt":"x","guided_grammar":"root ::= \"a\""})").kind,
            output_constraint::grammar);
  // vLLM's backend hint names an implementation, not a constraint: accepted and unused.
  EXPECT_EQ(
      parse_constraint(R"({"prompt":"x","guided_regex":"a","guided_decoding_backend":"xgrammar"})")
          .kind,
      output_constraint::regex);
}

TEST(structured_output_fields, the_constraint_reaches_every_prompt_and_the_websocket_body) {
  openai_request out;
  ASSERT_FALSE(parse_openai_request(R"({"prompt":["a","b"],"guided_choice":["x","y"]})",
                                    api_kind::completion, out));
  ASSERT_EQ(out.prompts.size(), 2u);
  for (const auto& p : out.prompts) EXPECT_EQ(p.params.structured.choices.size(), 2u);
  // Parsed JSON with its text beside it (the WebSocket path) keeps the order too.
  const std::string text = R"({"prompt":"x","guided_json":{"z":{},"a":{}}})";
  ASSERT_FALSE(parse_openai_json(nlohmann::json::parse(text), api_kind::completion, out, {}, text));
  EXPECT_EQ(out.prompts[0].params.structured.source, R"({"z":{},"a":{}})");
}

TEST(structured_output_fields, bad_shapes_are_400s_naming_the_field) {
  const std::tuple<const char*, const char*> cases[] = {
      {R"({"prompt":"x","response_format":"json"})", "response_format"},
      {R"({"prompt":"x","response_format":{"type":"yaml"}})", "response_format"},
      {R"({"prompt":"x","response_format":{"type":"json_schema"}})", "response_format"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{}}})",
       "response_format"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":5}}})",
       "response_format"},
      {R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":{},)"
       R"("strict":"yes"}}})",
       "response_format"},
      {R"({"prompt":"x","structured_outputs":[]})", "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{}})", "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{"regex":5}})", "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{"choice":[]}})", "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{"choice":["a",1]}})", "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{"regex":"a","grammar":"root ::= \"a\""}})",
       "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{"json_object":"yes"}})", "structured_outputs"},
      {R"({"prompt":"x","structured_outputs":{"regex":"a","whitespace_pattern":" "}})",
       "structured_outputs"},
      {R"({"prompt":"x","guided_regex":["a"]})", "guided_regex"},
      {R"({"prompt":"x","guided_choice":"a"})", "guided_choice"},
      {R"({"prompt":"x","guided_whitespace_pattern":" "})", "guided_whitespace_pattern"},
      // Two constraints at once: which would win is a guess, so neither does.
      {R"({"prompt":"x","response_format":{"type":"json_object"},"guided_regex":"a"})",
       "guided_regex"},
  };
  for (const auto& [body, param] : cases) {
    const api_error e = constraint_error(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

}  // namespace
}  // namespace actorllm::api
