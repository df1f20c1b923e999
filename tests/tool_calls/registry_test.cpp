#include "tool_calls/registry.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tool_calls/openai_json.hpp"

namespace actorllm::tool_calls {
namespace {

TEST(registry, makes_each_parser_by_its_vllm_name) {
  for (std::string_view name : tool_call_parser_names()) {
    EXPECT_FALSE(check_tool_call_parser_name(name).has_value());
    EXPECT_EQ(make_tool_call_parser(name, {})->name(), name);
  }
  for (std::string_view name : reasoning_parser_names()) {
    EXPECT_FALSE(check_reasoning_parser_name(name).has_value());
    EXPECT_EQ(make_reasoning_parser(name, false)->name(), name);
  }
  EXPECT_EQ(tool_call_parser_names().size(), 4u);
  EXPECT_EQ(reasoning_parser_names().size(), 2u);
}

TEST(registry, unknown_names_get_an_error_listing_the_known_ones) {
  const std::optional<std::string> error = check_tool_call_parser_name("hermes2");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error,
            "unknown tool call parser \"hermes2\"; known: hermes, llama3_json, mistral, pythonic");
  EXPECT_EQ(*check_reasoning_parser_name("r1"),
            "unknown reasoning parser \"r1\"; known: deepseek_r1, qwen3");
  try {
    make_tool_call_parser("llama4_json", {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), *check_tool_call_parser_name("llama4_json"));
  }
  EXPECT_THROW(make_reasoning_parser("granite", true), std::invalid_argument);
}

TEST(openai_json, calls_and_deltas_in_openai_shape) {
  const tool_call call{.id = "call_1", .name = "f", .arguments = "{\"a\": 1}"};
  EXPECT_EQ(to_openai_json(call), nlohmann::json::parse(R"({"id": "call_1", "type": "function",
                                      "function": {"name": "f", "arguments": "{\"a\": 1}"}})"));
  stream_event start;
  start.what = stream_event::kind::call_start;
  start.call_index = 1;
  start.id = "call_2";
  start.name = "g";
  EXPECT_EQ(to_openai_delta(start),
            nlohmann::json::parse(R"({"index": 1, "id": "call_2", "type": "function",
                                      "function": {"name": "g", "arguments": ""}})"));
  stream_event args;
  args.what = stream_event::kind::call_arguments;
  args.call_index = 1;
  args.text = "{\"ci";
  EXPECT_EQ(to_openai_delta(args),
            nlohmann::json::parse(R"({"index": 1, "function": {"arguments": "{\"ci"}})"));
}

}  // namespace
}  // namespace actorllm::tool_calls
