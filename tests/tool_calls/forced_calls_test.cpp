#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/tool_calls/stream_check.hpp"
#include "tool_calls/forced_calls_parser.hpp"
#include "tool_calls/forced_calls_schema.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::expect_chunking_invariant;
using testing::parse_text;

tool_parser_options seeded() {
  tool_parser_options options;
  options.id_seed = 23;
  return options;
}

testing::parser_factory required() {
  return [] { return std::make_unique<required_calls_parser>(seeded()); };
}

testing::parser_factory named(std::string name) {
  return [name] { return std::make_unique<named_call_parser>(name, seeded()); };
}

const nlohmann::json kTools = nlohmann::json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {
     "type": "object", "properties": {"city": {"$ref": "#/$defs/city"}}, "required": ["city"],
     "$defs": {"city": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "get_time"}}
])");

TEST(forced_calls_schema, required_is_an_array_of_calls_of_the_tools) {
  const nlohmann::json schema = required_calls_schema(kTools);
  EXPECT_EQ(schema["type"], "array");
  EXPECT_EQ(schema["minItems"], 1);
  const nlohmann::json& any_of = schema["items"]["anyOf"];
  ASSERT_EQ(any_of.size(), 2u);
  EXPECT_EQ(any_of[0]["properties"]["name"]["enum"], nlohmann::json::array({"get_weather"}));
  EXPECT_FALSE(any_of[0]["properties"]["parameters"].contains("$defs"));
  EXPECT_EQ(schema["$defs"]["city"]["type"], "string");
  EXPECT_EQ(any_of[1]["properties"]["parameters"],
            nlohmann::json::parse(R"({"type": "object", "properties": {}})"));
  EXPECT_EQ(any_of[1]["required"], nlohmann::json::array({"name", "parameters"}));
}

TEST(forced_calls_schema, conflicting_defs_and_unknown_names_are_errors) {
  nlohmann::json tools = kTools;
  tools[1]["function"]["parameters"] = {{"type", "object"},
                                        {"$defs", {{"city", {{"type", "integer"}}}}}};
  EXPECT_THROW(required_calls_schema(tools), std::invalid_argument);
  EXPECT_EQ(named_call_schema(kTools, "get_weather")["required"], nlohmann::json::array({"city"}));
  try {
    named_call_schema(kTools, "launch");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "Tool 'launch' has not been passed in `tools`.");
  }
}

TEST(required_calls_parser, reads_the_forced_array) {
  const std::string text =
      "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}, "
      "{\"name\": \"get_time\", \"parameters\": {}}]";
  const parsed_output out = parse_text(required(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(out.calls[1].name, "get_time");
  expect_chunking_invariant(required(), text);
  // Not an array of calls (only possible without the grammar): content.
  EXPECT_EQ(parse_text(required(), "sorry").content, "sorry");
  EXPECT_EQ(parse_text(required(), "[1]").content, "[1]");
}

TEST(named_call_parser, the_output_is_the_arguments) {
  const std::string text = " {\"city\": \"Paris\"}";
  const parsed_output out = parse_text(named("get_weather"), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Paris\"}");
  expect_chunking_invariant(named("get_weather"), text);
}

}  // namespace
}  // namespace actorllm::tool_calls
