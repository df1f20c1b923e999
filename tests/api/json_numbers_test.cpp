// A model's JSON with a number no double holds: read, the number kept as the text it was.
#include "api/json_numbers.hpp"

#include <gtest/gtest.h>

#include "api/openai_protocol.hpp"

namespace actorllm::api {
namespace {

TEST(json_numbers, a_number_past_doubles_range_is_kept_as_its_text) {
  const auto v = parse_keeping_huge_numbers(
      R"({"a": 53E26305909, "b": [-1e99999, 2.5, "53E26305909 \" 9e999"], "c": 1e-99999})");
  ASSERT_FALSE(v.is_discarded());
  EXPECT_EQ(v["a"], "53E26305909");
  EXPECT_EQ(v["b"][0], "-1e99999");
  EXPECT_EQ(v["b"][1], 2.5);
  EXPECT_EQ(v["b"][2], "53E26305909 \" 9e999");  // inside a string: untouched
  EXPECT_EQ(v["c"], 0.0);                        // an underflow is a double: zero
  EXPECT_EQ(parse_keeping_huge_numbers(R"({"a": 1})")["a"], 1);
  EXPECT_TRUE(parse_keeping_huge_numbers(R"({"a": 1e999)").is_discarded());
  EXPECT_TRUE(parse_keeping_huge_numbers("not json 1e999").is_discarded());
}

TEST(json_numbers, a_chat_history_with_such_a_call_is_read_not_refused) {
  // An agent sends back the call the model made: it must not be a 400.
  openai_request out;
  const auto error =
      parse_openai_request(R"({"messages":[{"role":"user","content":"hi"},)"
                           R"({"role":"assistant","tool_calls":[{"id":"c1","type":"function",)"
                           R"("function":{"name":"f","arguments":"{\"n\": 53E26305909}"}}]},)"
                           R"({"role":"tool","tool_call_id":"c1","content":"ok"}]})",
                           api_kind::chat, out);
  ASSERT_FALSE(error) << error->message;
  const auto chat = nlohmann::json::parse(out.prompts[0].chat_json);
  EXPECT_EQ(chat["messages"][1]["tool_calls"][0]["function"]["arguments"]["n"], "53E26305909");
}

}  // namespace
}  // namespace actorllm::api
