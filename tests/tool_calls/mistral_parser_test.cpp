#include "tool_calls/mistral_parser.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "tests/tool_calls/stream_check.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::expect_chunking_invariant;
using testing::parse_text;

testing::parser_factory mistral() {
  tool_parser_options options;
  options.id_seed = 5;
  return [options] { return std::make_unique<mistral_parser>(options); };
}

bool is_mistral_id(const std::string& id) {
  return id.size() == 9 &&
         std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(c); });
}

// Mistral 7B v0.3 / Nemo: the list form, as the Nemo template renders an assistant's calls.
TEST(mistral_parser, list_form) {
  const std::string text =
      "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
      "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]";
  const parsed_output out = parse_text(mistral(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(out.calls[1].arguments, "{\"zone\": \"CET\"}");
  EXPECT_TRUE(is_mistral_id(out.calls[0].id)) << out.calls[0].id;
  EXPECT_NE(out.calls[0].id, out.calls[1].id);
  expect_chunking_invariant(mistral(), text);
}

TEST(mistral_parser, content_before_the_marker_and_space_after_it) {
  const std::string text = "Checking. [TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]";
  const parsed_output out = parse_text(mistral(), text);
  EXPECT_EQ(out.content, "Checking. ");
  ASSERT_EQ(out.calls.size(), 1u);
  expect_chunking_invariant(mistral(), text);
}

// Tokenizer v11+: [TOOL_CALLS]name[ARGS]{...}, repeated for several calls.
TEST(mistral_parser, name_args_form) {
  const std::string text =
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": [1, 2]}"
      "[TOOL_CALLS]get_time[ARGS]{}";
  const parsed_output out = parse_text(mistral(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Paris\", \"days\": [1, 2]}");
  EXPECT_EQ(out.calls[1].name, "get_time");
  EXPECT_EQ(out.calls[1].arguments, "{}");
  expect_chunking_invariant(mistral(), text);
}

TEST(mistral_parser, call_id_tag_gives_the_id) {
  const std::string text = "[TOOL_CALLS]f[CALL_ID]a1B2c3D4e[ARGS]{\"x\": 1}";
  const parsed_output out = parse_text(mistral(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].id, "a1B2c3D4e");
  EXPECT_EQ(out.calls[0].arguments, "{\"x\": 1}");
  expect_chunking_invariant(mistral(), text);
}

TEST(mistral_parser, malformed_calls_are_content) {
  for (std::string_view text : {
           "[TOOL_CALLS]",
           "[TOOL_CALLS] not a call",
           "[TOOL_CALLS][{\"arguments\": {}}]",
           "[TOOL_CALLS]f{\"x\": 1}",
           "[TOOL_CALLS]f[ARG]{}",
           "[TOOL_CALLS]f[ARGS]\"text\"",
           "[TOOL_CALLS][]",
           "[TOOL_CALL",
       }) {
    const parsed_output out = parse_text(mistral(), text);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    expect_chunking_invariant(mistral(), text);
  }
}

TEST(mistral_parser, cut_outputs) {
  // Inside the list after a complete call: the call stands, the open list is dropped.
  const std::string text = "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, ";
  const parsed_output out = parse_text(mistral(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.content, "");
  expect_chunking_invariant(mistral(), text);
  const std::string args = "[TOOL_CALLS]f[ARGS]{\"a\": [1, 2";
  const parsed_output cut = parse_text(mistral(), args);
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].arguments, "{\"a\": [1, 2");
  expect_chunking_invariant(mistral(), args);
}

TEST(mistral_parser, text_after_calls_is_content) {
  const std::string text = "[TOOL_CALLS]f[ARGS]{}\n\nI called f.";
  const parsed_output out = parse_text(mistral(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.content, "\n\nI called f.");
  expect_chunking_invariant(mistral(), text);
}

}  // namespace
}  // namespace actorllm::tool_calls
