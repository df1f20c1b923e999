// Real token boundaries: outputs encoded with the Qwen3 and Llama 3 tokenizers of ../shared
// and streamed through the incremental detokenizer one token at a time, as the server does.
#include <gtest/gtest.h>

#include "tests/support/test_data.hpp"
#include "tokenizer/incremental_detokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tool_calls/assistant_output_parser.hpp"
#include "tool_calls/registry.hpp"

namespace actorllm::tool_calls {
namespace {

std::unique_ptr<assistant_output_parser> make_parser(std::string_view reasoning,
                                                     std::string_view tools) {
  tool_parser_options options;
  options.id_seed = 17;
  return std::make_unique<assistant_output_parser>(
      reasoning.empty() ? nullptr : make_reasoning_parser(reasoning, false),
      make_tool_call_parser(tools, options));
}

// Streams `text` token by token and checks the result against the whole-text parse.
assistant_message stream_by_tokens(const tokenizer& tok, std::string_view text,
                                   std::string_view reasoning, std::string_view tools,
                                   std::size_t& num_deltas) {
  const std::vector<int32_t> ids = tok.encode(text, false);
  incremental_detokenizer detok(tok, /*skip_special_tokens=*/true);
  auto parser = make_parser(reasoning, tools);
  assistant_message streamed;
  num_deltas = 0;
  for (int32_t id : ids) {
    const std::string delta = detok.push(id);
    num_deltas += !delta.empty();
    apply_delta(streamed, parser->feed(delta));
  }
  apply_delta(streamed, parser->feed(detok.finish()));
  apply_delta(streamed, parser->finish());
  auto whole = make_parser(reasoning, tools);
  EXPECT_EQ(streamed, parse_whole(*whole, text)) << text;
  return streamed;
}

TEST(token_stream, qwen3_thinking_and_hermes_calls_token_by_token) {
  const tokenizer qwen = tokenizer::load(actorllm::testing::shared_dir() / "tokenizers" / "qwen3");
  // <tool_call> and <think> are added tokens that are not special: they survive
  // skip_special_tokens, so the parsers see them.
  ASSERT_EQ(qwen.encode("<tool_call>", false).size(), 1u);
  ASSERT_FALSE(qwen.is_special(qwen.encode("<think>", false)[0]));
  const std::string text =
      "<think>\nThe user wants the weather in Paris and the time in Tokyo. I'll call both "
      "tools.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
      "\"arguments\": {\"zone\": \"Asia/Tokyo\"}}\n</tool_call>";
  std::size_t num_deltas = 0;
  const assistant_message m = stream_by_tokens(qwen, text, "qwen3", "hermes", num_deltas);
  EXPECT_GT(num_deltas, 40u);
  EXPECT_EQ(m.reasoning,
            "\nThe user wants the weather in Paris and the time in Tokyo. I'll call both tools.\n");
  ASSERT_EQ(m.output.calls.size(), 2u);
  EXPECT_EQ(m.output.calls[0].arguments, "{\"city\": \"Paris\", \"unit\": \"celsius\"}");
  EXPECT_EQ(m.output.calls[1].name, "get_time");
}

TEST(token_stream, llama3_json_and_pythonic_token_by_token) {
  const tokenizer llama =
      tokenizer::load(actorllm::testing::shared_dir() / "tokenizers" / "llama3");
  std::size_t num_deltas = 0;
  const assistant_message json = stream_by_tokens(
      llama,
      "{\"name\": \"get_current_conditions\", \"parameters\": {\"location\": \"San Francisco, "
      "CA\", \"unit\": \"Fahrenheit\"}}",
      "", "llama3_json", num_deltas);
  EXPECT_GT(num_deltas, 15u);
  ASSERT_EQ(json.output.calls.size(), 1u);
  EXPECT_EQ(json.output.calls[0].name, "get_current_conditions");
  const assistant_message py =
      stream_by_tokens(llama, "[get_weather(city='San Francisco', days=3), get_time(zone=\"PST\")]",
                       "", "pythonic", num_deltas);
  ASSERT_EQ(py.output.calls.size(), 2u);
  EXPECT_EQ(py.output.calls[0].arguments, "{\"city\": \"San Francisco\", \"days\": 3}");
}

}  // namespace
}  // namespace actorllm::tool_calls
