// A string format or pattern together with minLength / maxLength: the texts of both, lengths
// counted in characters of the decoded string (an escape is one, a UTF-8 sequence one).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <regex>

#include "grammar/grammar_error.hpp"
#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

using testing::matches;
using testing::schema;

std::string in_quotes(const std::string& s) {
  return "\"" + s + "\"";
}

TEST(format_lengths, pydantic_bounded_email) {
  auto g = schema(R"({"type": "string", "format": "email", "maxLength": 254})");
  // 254 characters: local part 64, domain of labels.
  const std::string domain = std::string(60, 'b') + "." + std::string(60, 'c') + "." +
                             std::string(60, 'd') + ".com";  // 185 characters
  const std::string at_limit = std::string(254 - 1 - domain.size(), 'a') + "@" + domain;
  ASSERT_EQ(at_limit.size(), 254u);
  EXPECT_TRUE(matches(g, in_quotes(at_limit)));
  EXPECT_FALSE(matches(g, in_quotes("a" + at_limit)));
  EXPECT_TRUE(matches(g, in_quotes("a.b+c@example.co.uk")));
  EXPECT_TRUE(matches(g, in_quotes("x@y.io")));
  EXPECT_FALSE(matches(g, in_quotes("a@b")));
  EXPECT_FALSE(matches(g, in_quotes("a b@example.com")));
  EXPECT_FALSE(matches(g, in_quotes("@example.com")));
}

TEST(format_lengths, minimum_and_maximum_with_a_format) {
  auto g = schema(R"({"type": "string", "format": "email", "minLength": 8, "maxLength": 9})");
  for (const char* ok : {"ab@cd.io", "abc@cd.io"}) EXPECT_TRUE(matches(g, in_quotes(ok))) << ok;
  for (const char* no : {"a@cd.io", "abcd@cd.io", "abcdefgh"})
    EXPECT_FALSE(matches(g, in_quotes(no))) << no;
  auto t = schema(R"({"type": "string", "format": "time", "maxLength": 9})");
  EXPECT_TRUE(matches(t, in_quotes("23:59:59Z")));
  EXPECT_FALSE(matches(t, in_quotes("23:59:59.5Z")));
}

TEST(format_lengths, pattern_with_lengths) {
  auto g = schema(R"({"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4})");
  for (const char* ok : {"ab", "abc", "abcd"}) EXPECT_TRUE(matches(g, in_quotes(ok))) << ok;
  for (const char* no : {"", "a", "abcde", "AB", "a1"})
    EXPECT_FALSE(matches(g, in_quotes(no))) << no;
  auto only_min = schema(R"({"type": "string", "pattern": "x*", "minLength": 3})");
  EXPECT_TRUE(matches(only_min, in_quotes("xxx")));
  EXPECT_TRUE(matches(only_min, in_quotes(std::string(500, 'x'))));
  EXPECT_FALSE(matches(only_min, in_quotes("xx")));
}

TEST(format_lengths, escapes_and_multibyte_characters_count_once) {
  // Quote, backslash, é and a control character are one character each as decoded.
  auto g = schema(R"({"type": "string", "pattern": "^[\"\\\\a\u00e9\\x01\\n]*$", "maxLength": 3})");
  for (const char* ok : {R"(\"\\é)", R"(\u0001\na)", R"(ééé)", R"(\"\"\")"})
    EXPECT_TRUE(matches(g, in_quotes(ok))) << ok;
  for (const char* no : {R"(\"\\éa)", R"(\u0001\n\u0001\n)", R"(éééé)"})
    EXPECT_FALSE(matches(g, in_quotes(no))) << no;
}

TEST(format_lengths, random_strings_agree_with_the_oracle) {
  const char* pattern = "[a-c]+(-[a-c]+)*";
  const std::regex oracle(pattern);
  auto g = schema(std::string(R"({"type": "string", "pattern": ")") + pattern +
                  R"(", "minLength": 3, "maxLength": 7})");
  std::mt19937 rng(11);
  int accepted = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    const int len = int(rng() % 10);
    for (int j = 0; j < len; ++j) s += "abc-"[rng() % 4];
    const bool expected = std::regex_match(s, oracle) && s.size() >= 3 && s.size() <= 7;
    accepted += expected;
    ASSERT_EQ(matches(g, in_quotes(s)), expected) << s;
  }
  EXPECT_GT(accepted, 200);
}

TEST(format_lengths, cost_is_bounded_and_refusals_are_clear) {
  const auto start = std::chrono::steady_clock::now();
  try {
    schema(R"({"type": "string", "format": "email", "maxLength": 100000})");
    ADD_FAILURE() << "no error";
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find("grammar too large"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  try {
    schema(R"({"type": "string", "format": "email", "pattern": "a@b\\.cd"})");
    ADD_FAILURE() << "no error";
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find("format together with pattern is not enforced"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(schema(R"({"type": "string", "format": "date", "minLength": 11})"), grammar_error);
}

}  // namespace
}  // namespace actorllm::grammar
