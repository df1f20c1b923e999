// tools / tool_choice / parallel_tool_calls: which mode each choice gives, the structured
// output a forced choice becomes, and the 400s for what does not fit.
#include "api/tool_fields.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace actorllm::api {
namespace {

using nlohmann::json;

const tool_settings with_parser{true, "hermes"};

const std::string messages = R"("messages":[{"role":"user","content":"hi"}])";
const std::string tools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"zone":{"type":"string"},"city":{"type":"string"}},"required":["city"]}}},)"
    R"({"type":"function","function":{"name":"noop"}}])";

openai_request parse_with_tools(const std::string& fields,
                                const tool_settings& settings = with_parser) {
  openai_request out;
  const std::string body = "{" + messages + "," + fields + "}";
  auto error = parse_openai_request(body, api_kind::chat, out, {}, settings);
  EXPECT_FALSE(error) << body << " -> " << (error ? error->message : "");
  return out;
}

api_error tool_fields_error(const std::string& fields,
                            const tool_settings& settings = with_parser) {
  openai_request out;
  auto error =
      parse_openai_request("{" + messages + "," + fields + "}", api_kind::chat, out, {}, settings);
  EXPECT_TRUE(error) << fields;
  return error.value_or(api_error{});
}

TEST(tool_fields, auto_and_implied_auto_parse_with_the_servers_parser) {
  for (const std::string& choice : {std::string(R"(,"tool_choice":"auto")"), std::string()}) {
    const auto r = parse_with_tools(tools + choice);
    EXPECT_EQ(r.tools.mode, tool_mode::parse);
    EXPECT_EQ(r.tools.names, (std::vector<std::string>{"get_weather", "noop"}));
    EXPECT_FALSE(r.prompts[0].params.structured.active());
  }
  EXPECT_EQ(parse_with_tools(tools + R"(,"tool_choice":"none")").tools.mode, tool_mode::none);
  EXPECT_EQ(parse_with_tools(tools + R"(,"tool_choice":null)").tools.mode, tool_mode::none);
  // Without --enable-auto-tool-choice, the flags are named.
  const api_error e = tool_fields_error(tools, tool_settings{false, "hermes"});
  EXPECT_NE(e.message.find("--enable-auto-tool-choice"), std::string::npos);
}

TEST(tool_fields, a_named_function_is_its_parameters_schema_in_the_clients_order) {
  const auto r = parse_with_tools(
      tools + R"(,"tool_choice":{"type":"function","function":{"name":"get_weather"}})");
  EXPECT_EQ(r.tools.mode, tool_mode::forced_named);
  EXPECT_EQ(r.tools.forced_name, "get_weather");
  const auto& c = r.prompts[0].params.structured;
  EXPECT_EQ(c.kind, output_constraint::json_schema);
  EXPECT_EQ(c.field, "tool_choice");
  EXPECT_EQ(c.source,
            R"({"type":"object","properties":{"zone":{"type":"string"},"city":{"type":"string"}},)"
            R"("required":["city"]})");
  // No parameters: any object.
  const auto noop =
      parse_with_tools(tools + R"(,"tool_choice":{"type":"function","function":{"name":"noop"}})");
  EXPECT_EQ(noop.prompts[0].params.structured.source, R"({"type":"object"})");
}

// The OpenAI Agents SDK sends an agent's output type as response_format beside a forced tool:
// the forced call's schema decides the output, as vLLM lets it.
TEST(tool_fields, a_forced_call_outranks_a_response_format) {
  for (const char* choice :
       {R"("required")", R"({"type":"function","function":{"name":"noop"}})"}) {
    const auto r = parse_with_tools(tools + R"(,"tool_choice":)" + choice +
                                    R"(,"response_format":{"type":"json_schema","json_schema":)"
                                    R"({"name":"out","schema":{"type":"integer"}}})");
    const auto& c = r.prompts[0].params.structured;
    EXPECT_EQ(c.kind, output_constraint::json_schema) << choice;
    EXPECT_EQ(c.field, "tool_choice") << choice;
    EXPECT_EQ(c.source.find("integer"), std::string::npos) << choice << ": " << c.source;
  }
}

TEST(tool_fields, required_is_an_array_of_calls_one_of_the_tools_each) {
  const auto r = parse_with_tools(tools + R"(,"tool_choice":"required")");
  EXPECT_EQ(r.tools.mode, tool_mode::forced_required);
  const json schema = json::parse(r.prompts[0].params.structured.source);
  EXPECT_EQ(schema["type"], "array");
  EXPECT_EQ(schema["minItems"], 1);
  EXPECT_FALSE(schema.contains("maxItems"));
  ASSERT_EQ(schema["items"]["anyOf"].size(), 2u);
  EXPECT_EQ(schema["items"]["anyOf"][0]["properties"]["name"]["enum"][0], "get_weather");
  EXPECT_EQ(schema["items"]["anyOf"][1]["properties"]["parameters"]["type"], "object");
  // A tool whose parameters refer to their own $defs keeps them resolvable.
  const auto refs = parse_with_tools(
      R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
      R"("properties":{"p":{"$ref":"#/$defs/point"}},"$defs":{"point":{"type":"integer"}}}}}],)"
      R"("tool_choice":"required")");
  EXPECT_EQ(json::parse(refs.prompts[0].params.structured.source)["$defs"]["point"]["type"],
            "integer");
  const auto one =
      parse_with_tools(tools + R"(,"tool_choice":"required","parallel_tool_calls":false)");
  EXPECT_FALSE(one.tools.parallel);
  EXPECT_EQ(json::parse(one.prompts[0].params.structured.source)["maxItems"], 1);
}

TEST(tool_fields, mistral_output_keeps_its_special_tokens_for_the_parser) {
  EXPECT_FALSE(parse_with_tools(tools, tool_settings{true, "mistral"})
                   .prompts[0]
                   .params.skip_special_tokens);
  EXPECT_TRUE(
      parse_with_tools(tools, tool_settings{true, "hermes"}).prompts[0].params.skip_special_tokens);
}

TEST(tool_fields, what_does_not_fit_is_a_400_naming_the_field) {
  const std::pair<std::string, std::string> cases[] = {
      {R"("tools":{})", "tools"},
      {R"("tools":[{"type":"retrieval"}])", "tools"},
      {R"("tools":[{"type":"function","function":{"name":"has space"}}])", "tools"},
      {R"("tools":[{"type":"function","function":{"name":"f","parameters":5}}])", "tools"},
      {tools + R"(,"tool_choice":"sometimes")", "tool_choice"},
      {tools + R"(,"tool_choice":{"type":"function","function":{"name":"missing"}})",
       "tool_choice"},
      {R"("tool_choice":"required")", "tool_choice"},
      {tools + R"(,"tool_choice":"required","parallel_tool_calls":"no")", "parallel_tool_calls"},
  };
  for (const auto& [fields, param] : cases) {
    const api_error e = tool_fields_error(fields);
    EXPECT_EQ(e.status, 400) << fields;
    EXPECT_EQ(e.param, param) << fields << ": " << e.message;
  }
  std::string many = R"("tools":[)";
  for (int i = 0; i < 129; ++i)
    many += std::string(i ? "," : "") + R"({"type":"function","function":{"name":"f)" +
            std::to_string(i) + R"("}})";
  EXPECT_EQ(tool_fields_error(many + "]").param, "tools");
}

}  // namespace
}  // namespace actorllm::api
