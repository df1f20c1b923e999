#include "tool_calls/llama3_json_parser.hpp"

#include <gtest/gtest.h>

#include "tests/tool_calls/stream_check.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::expect_chunking_invariant;
using testing::parse_text;

testing::parser_factory llama3() {
  tool_parser_options options;
  options.id_seed = 11;
  return [options] { return std::make_unique<llama3_json_parser>(options); };
}

// Llama 3.1's template asks for {"name": function name, "parameters": dictionary of argument
// name and its value}; the model may prefix <|python_tag|>.
TEST(llama3_json_parser, parameters_object_as_the_template_asks) {
  const std::string text =
      "{\"name\": \"get_current_conditions\", \"parameters\": {\"location\": \"San Francisco, "
      "CA\", "
      "\"unit\": \"Fahrenheit\"}}";
  const parsed_output out = parse_text(llama3(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_current_conditions");
  EXPECT_EQ(out.calls[0].arguments,
            "{\"location\": \"San Francisco, CA\", \"unit\": \"Fahrenheit\"}");
  expect_chunking_invariant(llama3(), text);
}

TEST(llama3_json_parser, python_tag_and_several_calls_separated_by_semicolons) {
  const std::string text =
      "<|python_tag|>{\"name\": \"a\", \"arguments\": {\"x\": 1}}; {\"name\": \"b\", "
      "\"parameters\": {\"y\": \"two\"}} ;{\"name\": \"c\", \"parameters\": {}}";
  const parsed_output out = parse_text(llama3(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 3u);
  EXPECT_EQ(out.calls[1].name, "b");
  EXPECT_EQ(out.calls[1].arguments, "{\"y\": \"two\"}");
  EXPECT_EQ(out.calls[2].arguments, "{}");
  expect_chunking_invariant(llama3(), text);
}

TEST(llama3_json_parser, leading_whitespace_is_allowed) {
  const std::string text = "\n\n  {\"name\": \"f\", \"parameters\": {\"a\": [true, false]}}\n";
  const parsed_output out = parse_text(llama3(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.content, "");
  expect_chunking_invariant(llama3(), text);
}

TEST(llama3_json_parser, text_first_or_json_that_is_not_a_call_is_content) {
  for (std::string_view text : {
           "The weather is nice.",
           "Here: {\"name\": \"f\", \"parameters\": {}}",   // calls only at the start
           "{\"answer\": 42}",                              // JSON, but no call
           "{\"name\": \"f\", \"parameters\": {\"a\": }}",  // malformed after the commit
           "<|python_tag|>brave_search.call(query=\"x\")",  // a built-in tool: not JSON
           "<|python_ta",
           "   ",
           "{",
       }) {
    expect_chunking_invariant(llama3(), text);
  }
  EXPECT_EQ(parse_text(llama3(), "{\"answer\": 42}").content, "{\"answer\": 42}");
  EXPECT_EQ(parse_text(llama3(), "The weather is nice.").content, "The weather is nice.");
  EXPECT_EQ(parse_text(llama3(), "<|python_tag|>brave_search.call(query=\"x\")").content,
            "<|python_tag|>brave_search.call(query=\"x\")");
  EXPECT_TRUE(parse_text(llama3(), "Here: {\"name\": \"f\", \"parameters\": {}}").calls.empty());
}

TEST(llama3_json_parser, text_after_the_calls_is_content) {
  const std::string text = "{\"name\": \"f\", \"parameters\": {}} and then some";
  const parsed_output out = parse_text(llama3(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.content, " and then some");
  expect_chunking_invariant(llama3(), text);
}

TEST(llama3_json_parser, trailing_separator_is_dropped) {
  const std::string text = "{\"name\": \"f\", \"parameters\": {}};  ";
  const parsed_output out = parse_text(llama3(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.content, "");
  expect_chunking_invariant(llama3(), text);
}

}  // namespace
}  // namespace actorllm::tool_calls
