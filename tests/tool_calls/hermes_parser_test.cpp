#include "tool_calls/hermes_parser.hpp"

#include <gtest/gtest.h>

#include "tests/tool_calls/stream_check.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::expect_chunking_invariant;
using testing::parse_text;

testing::parser_factory hermes(tool_parser_options options = {}) {
  options.id_seed = 7;
  return [options] { return std::make_unique<hermes_parser>(options); };
}

// What Qwen2.5 / Qwen3 write, as their chat templates render an assistant's tool_calls.
constexpr std::string_view kQwenCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

TEST(hermes_parser, one_call_no_content) {
  const parsed_output out = parse_text(hermes(), kQwenCall);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_TRUE(out.calls[0].id.starts_with("call_"));
  EXPECT_EQ(out.calls[0].id.size(), 29u);
  expect_chunking_invariant(hermes(), kQwenCall);
}

TEST(hermes_parser, content_before_and_two_calls) {
  const std::string text =
      "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": "
      "1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"y\": [1, {\"z\": null}]}}\n</tool_call>";
  const parsed_output out = parse_text(hermes(), text);
  EXPECT_EQ(out.content, "Let me check both.\n");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[1].name, "b");
  EXPECT_EQ(out.calls[1].arguments, "{\"y\": [1, {\"z\": null}]}");
  EXPECT_NE(out.calls[0].id, out.calls[1].id);
  expect_chunking_invariant(hermes(), text);
}

TEST(hermes_parser, plain_text_and_lookalikes_stay_content) {
  for (std::string_view text : {"Hello, world.", "a < b and <tool> and <tool_cal", "x <tool_call",
                                "", "<tool_call", "</tool_call> alone"}) {
    const parsed_output out = parse_text(hermes(), text);
    EXPECT_EQ(out.content, text);
    EXPECT_TRUE(out.calls.empty());
    expect_chunking_invariant(hermes(), text);
  }
}

TEST(hermes_parser, arguments_before_name_and_unicode) {
  const std::string text =
      "<tool_call>{\"arguments\": {\"q\": \"caf\xc3\xa9 \\u00e9\\\"\"}, \"name\": \"se\\u0061rch\"}"
      "</tool_call>";
  const parsed_output out = parse_text(hermes(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "search");
  EXPECT_EQ(out.calls[0].arguments, "{\"q\": \"caf\xc3\xa9 \\u00e9\\\"\"}");
  EXPECT_EQ(out.content, "");
  expect_chunking_invariant(hermes(), text);
}

TEST(hermes_parser, missing_end_tag_is_accepted) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n";
  const parsed_output out = parse_text(hermes(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{}");
  EXPECT_EQ(out.content, "");
  expect_chunking_invariant(hermes(), text);
}

TEST(hermes_parser, text_after_a_call_is_content_and_whitespace_between_calls_is_dropped) {
  const std::string text =
      std::string(kQwenCall) + "\n\n" + std::string(kQwenCall) + "\n  Done, it is sunny.";
  const parsed_output out = parse_text(hermes(), text);
  EXPECT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.content, "\n  Done, it is sunny.");
  expect_chunking_invariant(hermes(), text);
  // Whitespace after the last call only: dropped.
  EXPECT_EQ(parse_text(hermes(), std::string(kQwenCall) + "\n").content, "");
}

TEST(hermes_parser, malformed_json_before_the_name_is_content) {
  for (std::string_view text : {
           "<tool_call>\n{\"name\": get_weather}\n</tool_call>",
           "<tool_call>\n{'name': 'f', 'arguments': {}}\n</tool_call>",
           "<tool_call>not json</tool_call>",
           "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>",  // no name
           "<tool_call>\n{\"name\": \"f\"}\n</tool_call>",            // no arguments
           "<tool_call>\n{\"name\": 3, \"arguments\": {}}</tool_call>",
       }) {
    const parsed_output out = parse_text(hermes(), text);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    expect_chunking_invariant(hermes(), text);
  }
}

TEST(hermes_parser, error_after_commit_keeps_the_call_and_returns_the_rest_as_content) {
  const std::string text =
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1,, \"b\": 2}}</tool_call>";
  const parsed_output out = parse_text(hermes(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{\"a\": 1,");
  EXPECT_EQ(out.content, ", \"b\": 2}}</tool_call>");
  expect_chunking_invariant(hermes(), text);
  // Garbage between the object and </tool_call>.
  const std::string garbage = "<tool_call>{\"name\": \"f\", \"arguments\": {}} x</tool_call>";
  const parsed_output g = parse_text(hermes(), garbage);
  ASSERT_EQ(g.calls.size(), 1u);
  EXPECT_EQ(g.content, " x</tool_call>");
  expect_chunking_invariant(hermes(), garbage);
}

TEST(hermes_parser, output_cut_inside_the_arguments_keeps_the_partial_call) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Par";
  const parsed_output out = parse_text(hermes(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{\"city\": \"Par");
  expect_chunking_invariant(hermes(), text);
  // Cut before the arguments began: nothing was committed, all of it is content.
  const std::string early = "Hi <tool_call>\n{\"name\": \"f\", \"argu";
  EXPECT_EQ(parse_text(hermes(), early), (parsed_output{.content = early, .calls = {}}));
}

TEST(hermes_parser, unknown_names_pass_by_default_and_are_content_when_rejected) {
  const std::string text = "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>";
  EXPECT_EQ(parse_text(hermes(), text).calls.size(), 1u);
  tool_parser_options strict;
  strict.tool_names = {"get_weather"};
  strict.reject_unknown_names = true;
  const parsed_output out = parse_text(hermes(strict), text);
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, text);
  const parsed_output known = parse_text(hermes(strict), kQwenCall);
  EXPECT_EQ(known.calls.size(), 1u);
}

TEST(hermes_parser, max_calls_drops_later_calls) {
  tool_parser_options one;
  one.max_calls = 1;
  const std::string text =
      "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1}}</tool_call>\n"
      "<tool_call>{\"name\": \"b\", \"arguments\": {\"y\": 2}}</tool_call> ok";
  const parsed_output out = parse_text(hermes(one), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "a");
  EXPECT_EQ(out.calls[0].arguments, "{\"x\": 1}");
  EXPECT_EQ(out.content, " ok");
  expect_chunking_invariant(hermes(one), text);
}

TEST(hermes_parser, streams_name_first_then_argument_fragments) {
  tool_parser_options options;
  options.id_seed = 1;
  hermes_parser parser(options);
  EXPECT_TRUE(parser.feed("Sure.<tool").size() == 1);  // "Sure." only; "<tool" held back
  EXPECT_TRUE(parser.feed("_call>\n{\"name\": \"get_weather\", ").empty());
  const std::vector<stream_event> start = parser.feed("\"arguments\": {\"ci");
  ASSERT_EQ(start.size(), 2u);
  EXPECT_EQ(start[0].what, stream_event::kind::call_start);
  EXPECT_EQ(start[0].name, "get_weather");
  EXPECT_EQ(start[0].call_index, 0u);
  EXPECT_EQ(start[1].what, stream_event::kind::call_arguments);
  EXPECT_EQ(start[1].text, "{\"ci");
  const std::vector<stream_event> more = parser.feed("ty\": \"Paris\"}}\n</tool_call>");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].text, "ty\": \"Paris\"}");
  EXPECT_TRUE(parser.finish().empty());
  EXPECT_TRUE(parser.has_calls());
}

}  // namespace
}  // namespace actorllm::tool_calls
