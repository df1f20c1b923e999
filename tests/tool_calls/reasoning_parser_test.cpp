#include "tool_calls/reasoning_parser.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace actorllm::tool_calls {
namespace {

reasoning_split whole(std::string_view name, bool starts_in_reasoning, std::string_view text) {
  reasoning_parser parser(name, starts_in_reasoning);
  return split_reasoning(parser, text);
}

// Every split point and every byte alone give the whole-text split.
void expect_chunking_invariant(std::string_view name, bool starts_in_reasoning,
                               std::string_view text) {
  const reasoning_split expected = whole(name, starts_in_reasoning, text);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    reasoning_parser parser(name, starts_in_reasoning);
    reasoning_split got = parser.feed(text.substr(0, cut));
    const reasoning_split b = parser.feed(text.substr(cut));
    const reasoning_split c = parser.finish();
    got.reasoning += b.reasoning + c.reasoning;
    got.content += b.content + c.content;
    ASSERT_EQ(got, expected) << name << " split at " << cut << " of " << text;
  }
  reasoning_parser parser(name, starts_in_reasoning);
  reasoning_split got;
  for (char ch : text) {
    const reasoning_split piece = parser.feed(std::string_view(&ch, 1));
    got.reasoning += piece.reasoning;
    got.content += piece.content;
  }
  const reasoning_split end = parser.finish();
  got.reasoning += end.reasoning;
  got.content += end.content;
  ASSERT_EQ(got, expected) << name << " byte by byte: " << text;
}

reasoning_split split(std::string reasoning, std::string content) {
  return {.reasoning = std::move(reasoning), .content = std::move(content)};
}

// DeepSeek-R1's template ends the prompt with "<think>\n": the output begins in the thinking.
TEST(reasoning_parser, deepseek_r1_output_starts_inside_the_thinking) {
  const std::string text = "Okay, 2+2.\nIt is 4.\n</think>\n\nThe answer is **4**.";
  EXPECT_EQ(whole("deepseek_r1", true, text),
            split("Okay, 2+2.\nIt is 4.\n", "\n\nThe answer is **4**."));
  expect_chunking_invariant("deepseek_r1", true, text);
}

TEST(reasoning_parser, deepseek_r1_drops_a_think_tag_the_model_writes) {
  const std::string text = "<think>\nhmm</think>yes";
  EXPECT_EQ(whole("deepseek_r1", true, text), split("\nhmm", "yes"));
  expect_chunking_invariant("deepseek_r1", true, text);
}

TEST(reasoning_parser, deepseek_r1_without_end_tag_is_all_reasoning) {
  const std::string text = "still thinking about <thin";
  EXPECT_EQ(whole("deepseek_r1", true, text), split(text, ""));
  expect_chunking_invariant("deepseek_r1", true, text);
  EXPECT_EQ(whole("deepseek_r1", true, "  \n"), split("  \n", ""));
  EXPECT_EQ(whole("deepseek_r1", true, "</think>x"), split("", "x"));
}

TEST(reasoning_parser, qwen3_thinking_block) {
  const std::string text = "<think>\nThe user greets me.\n</think>\n\nHello! How can I help?";
  EXPECT_EQ(whole("qwen3", false, text),
            split("\nThe user greets me.\n", "\n\nHello! How can I help?"));
  expect_chunking_invariant("qwen3", false, text);
}

TEST(reasoning_parser, qwen3_without_thinking_is_content) {
  // enable_thinking false: the template closes an empty <think></think> in the prompt.
  for (std::string_view text : {"Hello!", "  <thinking> is a word", "<thi", "", "a </think> b"}) {
    EXPECT_EQ(whole("qwen3", false, text), split("", std::string(text))) << text;
    expect_chunking_invariant("qwen3", false, text);
  }
}

TEST(reasoning_parser, qwen3_with_the_prompt_opening_think_behaves_as_deepseek_r1) {
  const std::string prompt = "<|im_start|>assistant\n<think>\n";
  EXPECT_TRUE(prompt_opens_reasoning(prompt));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
  EXPECT_EQ(whole("qwen3", true, "plan</think>answer"), split("plan", "answer"));
}

TEST(reasoning_parser, tags_after_the_end_are_content_verbatim) {
  const std::string text = "<think>a</think>b<think>c</think>";
  EXPECT_EQ(whole("qwen3", false, text), split("a", "b<think>c</think>"));
  expect_chunking_invariant("qwen3", false, text);
}

TEST(reasoning_parser, reports_when_reasoning_ended) {
  reasoning_parser parser("deepseek_r1", true);
  parser.feed("abc</thi");
  EXPECT_FALSE(parser.reasoning_ended());
  EXPECT_EQ(parser.feed("nk>x"), split("", "x"));
  EXPECT_TRUE(parser.reasoning_ended());
}

TEST(reasoning_parser, long_leading_whitespace_is_bounded) {
  // Past 256 bytes of whitespace qwen3 decides there is no <think>.
  const std::string text = std::string(300, ' ') + "<think>x</think>y";
  EXPECT_EQ(whole("qwen3", false, text), split("", text));
  reasoning_parser parser("qwen3", false);
  EXPECT_EQ(parser.feed(std::string(300, ' ')).content.size(), 300u);
}

}  // namespace
}  // namespace actorllm::tool_calls
