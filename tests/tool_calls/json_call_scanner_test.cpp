#include "tool_calls/json_call_scanner.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace actorllm::tool_calls {
namespace {

// Whether the scanner reads `text` as exactly one complete value (done at its last byte).
bool scans_complete(std::string_view text, json_call_scanner::mode m) {
  json_call_scanner scanner(m, 1000);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto r = scanner.feed(text[i]);
    if (r.state == json_call_scanner::status::error) return false;
    if (r.state == json_call_scanner::status::done) return i + 1 == text.size();
  }
  return false;
}

TEST(json_call_scanner, agrees_with_nlohmann_on_chosen_objects) {
  for (std::string_view text :
       {R"({})",
        R"({"a":1})",
        R"({"a": -0.5e+10, "b": [true, false, null, "x\"\\\/\b\f\n\r\t\u00e9"]})",
        R"({"a":0})",
        R"({"a":01})",
        R"({"a":1.})",
        R"({"a":.5})",
        R"({"a":-})",
        R"({"a":1e})",
        R"({"a":1e+})",
        R"({"a":-0})",
        R"({"a":[1,]})",
        R"({"a":1,})",
        R"({,})",
        R"({"a" 1})",
        R"({"a":tru})",
        R"({"a":truex})",
        R"({"a":"\x"})",
        R"({"a":"\u12G4"})",
        "{\"a\":\"\t\"}",
        R"({"a":[]})",
        R"({"a":{}})",
        R"({"a":[[],[{}]]})",
        R"({"a":[}})",
        R"({"a":[,]})",
        R"({"a":[,}})",
        R"({1:2})",
        R"({"a":1]})",
        R"({"a":1}})",
        R"({"a":2E3})",
        R"({"a":1.5e-3})",
        R"({ "a" : [ 1 , 2 ] })"}) {
    const bool expected = nlohmann::json::accept(text);
    EXPECT_EQ(scans_complete(text, json_call_scanner::mode::call_object), expected) << text;
  }
}

TEST(json_call_scanner, agrees_with_nlohmann_on_random_texts) {
  const std::vector<std::string_view> pieces = {
      "{", "}", "[", "]", ":", ",",    " ",   "\"a\"", "\"\\", "\"", "1",
      "0", "-", ".", "e", "+", "true", "nul", "null",  "\\u",  "41", "x"};
  std::mt19937 rng(7);
  int num_valid = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = "{";
    const int n = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < n; ++i) {
      text += pieces[std::uniform_int_distribution<std::size_t>(0, pieces.size() - 1)(rng)];
    }
    if (round % 2 == 0) text += "}";
    // nlohmann accepts trailing whitespace; the scanner ends at the value's last byte.
    while (text.back() == ' ') text.pop_back();
    const bool expected = nlohmann::json::accept(text);
    num_valid += expected;
    ASSERT_EQ(scans_complete(text, json_call_scanner::mode::call_object), expected) << text;
    // The arguments mode reads any object or array the same way.
    ASSERT_EQ(scans_complete(text, json_call_scanner::mode::arguments_value), expected) << text;
  }
  EXPECT_GT(num_valid, 100);  // the random texts do reach valid JSON
}

TEST(json_call_scanner, finds_the_name_and_the_bytes_of_the_arguments) {
  const std::string text =
      R"({"id": 3, "name": "get_\u0077eather", "arguments": {"a": [1, "}"]} , "parameters": 5})";
  json_call_scanner scanner(json_call_scanner::mode::call_object, 64);
  std::string arguments;
  for (char c : text) {
    const auto r = scanner.feed(c);
    ASSERT_NE(r.state, json_call_scanner::status::error);
    if (r.in_arguments) arguments += c;
    if (r.name_complete) {
      EXPECT_EQ(scanner.name(), "get_weather");
    }
  }
  EXPECT_EQ(arguments, R"({"a": [1, "}"]})");  // the first of arguments / parameters counts
  EXPECT_TRUE(scanner.arguments_started());
}

TEST(json_call_scanner, scalar_arguments_end_before_their_terminator) {
  const std::string text = R"({"parameters": -12.5e3, "name": "f"})";
  json_call_scanner scanner(json_call_scanner::mode::call_object, 64);
  std::string arguments;
  for (char c : text) {
    if (scanner.feed(c).in_arguments) arguments += c;
  }
  EXPECT_EQ(arguments, "-12.5e3");
  EXPECT_EQ(scanner.name(), "f");
}

}  // namespace
}  // namespace actorllm::tool_calls
