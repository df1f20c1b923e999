#include "tool_calls/assistant_output_parser.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tool_calls/registry.hpp"

namespace actorllm::tool_calls {
namespace {

struct pipeline {
  std::string_view reasoning = {};  // "" for none
  bool starts_in_reasoning = false;
  std::string_view tools = {};  // "" for none

  std::unique_ptr<assistant_output_parser> make() const {
    tool_parser_options options;
    options.id_seed = 9;
    return std::make_unique<assistant_output_parser>(
        reasoning.empty() ? nullptr : make_reasoning_parser(reasoning, starts_in_reasoning),
        tools.empty() ? nullptr : make_tool_call_parser(tools, options));
  }
};

assistant_message whole(const pipeline& p, std::string_view text) {
  auto parser = p.make();
  return parse_whole(*parser, text);
}

void expect_chunking_invariant(const pipeline& p, std::string_view text) {
  const assistant_message expected = whole(p, text);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    auto parser = p.make();
    assistant_message got;
    apply_delta(got, parser->feed(text.substr(0, cut)));
    apply_delta(got, parser->feed(text.substr(cut)));
    apply_delta(got, parser->finish());
    ASSERT_EQ(got, expected) << "split at " << cut << " of " << text;
  }
}

// Qwen3 thinks, mentions the tag in its thinking, then calls a tool.
TEST(assistant_output_parser, qwen3_thinking_then_a_hermes_call) {
  const pipeline qwen{.reasoning = "qwen3", .starts_in_reasoning = false, .tools = "hermes"};
  const std::string text =
      "<think>\nI should use <tool_call> with get_weather.\n</think>\n\n<tool_call>\n"
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const assistant_message m = whole(qwen, text);
  EXPECT_EQ(m.reasoning, "\nI should use <tool_call> with get_weather.\n");
  EXPECT_EQ(m.output.content, "\n\n");
  ASSERT_EQ(m.output.calls.size(), 1u);
  EXPECT_EQ(m.output.calls[0].arguments, "{\"city\": \"Paris\"}");
  expect_chunking_invariant(qwen, text);
}

TEST(assistant_output_parser, either_part_may_be_absent) {
  const std::string r1 = "Let me think.</think>The answer is 4.";
  const assistant_message a = whole({.reasoning = "deepseek_r1", .starts_in_reasoning = true}, r1);
  EXPECT_EQ(a.reasoning, "Let me think.");
  EXPECT_EQ(a.output.content, "The answer is 4.");
  expect_chunking_invariant({.reasoning = "deepseek_r1", .starts_in_reasoning = true}, r1);
  const std::string call = "[get_time(zone='CET')]";
  const assistant_message b = whole({.tools = "pythonic"}, call);
  EXPECT_EQ(b.reasoning, "");
  EXPECT_EQ(b.output.calls.size(), 1u);
  const assistant_message c = whole({}, call);
  EXPECT_EQ(c.output.content, call);
}

TEST(assistant_output_parser, reports_calls_and_the_end_of_reasoning) {
  auto parser =
      pipeline{.reasoning = "deepseek_r1", .starts_in_reasoning = true, .tools = "hermes"}.make();
  EXPECT_FALSE(parser->reasoning_ended());
  parser->feed("hmm</think><tool_call>{\"name\": \"f\", \"argu");
  EXPECT_TRUE(parser->reasoning_ended());
  EXPECT_FALSE(parser->has_calls());
  parser->feed("ments\": {}}</tool_call>");
  EXPECT_TRUE(parser->has_calls());
}

// Deltas of whole UTF-8 give pieces of whole UTF-8 (nlohmann refuses to dump anything else).
TEST(assistant_output_parser, whole_utf8_in_gives_whole_utf8_out) {
  const pipeline qwen{.reasoning = "qwen3", .starts_in_reasoning = false, .tools = "hermes"};
  const std::vector<std::string_view> deltas = {
      "<thi",
      "nk>d\xc3\xa9j\xc3\xa0",
      " vu</th",
      "ink>\xe2\x82\xac<tool",
      "_call>{\"name\": \"f\xc3\xa9\", \"arguments\": {\"\xe2\x82\xac\": \"\xf0\x9f\x98\x80",
      "\"}}</tool_call>"};
  auto parser = qwen.make();
  auto check = [](const output_delta& d) {
    EXPECT_NO_THROW((void)nlohmann::json(d.reasoning).dump());
    for (const stream_event& e : d.events) {
      EXPECT_NO_THROW((void)nlohmann::json(e.text).dump());
      EXPECT_NO_THROW((void)nlohmann::json(e.name).dump());
    }
  };
  for (std::string_view d : deltas) check(parser->feed(d));
  check(parser->finish());
}

}  // namespace
}  // namespace actorllm::tool_calls
