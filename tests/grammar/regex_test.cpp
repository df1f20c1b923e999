// Regular expressions: each construct matches the whole text as Python's re.fullmatch
// would, and the unsupported ones are refused by name.
#include <gtest/gtest.h>

#include "grammar/regex_parser.hpp"
#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

using testing::matches;
using testing::regex;

struct regex_case {
  const char* pattern;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

void check(const regex_case& c) {
  auto g = regex(c.pattern);
  for (const auto& s : c.accepted)
    EXPECT_TRUE(matches(g, s)) << c.pattern << " should match '" << s << "'";
  for (const auto& s : c.rejected)
    EXPECT_FALSE(matches(g, s)) << c.pattern << " should not match '" << s << "'";
}

TEST(regex, literals_and_escaped_metacharacters) {
  check({"abc", {"abc"}, {"ab", "abcd", ""}});
  check({R"(a\.b\*\(\)\[\]\{\}\|\?\+\^\$\\)", {"a.b*()[]{}|?+^$\\"}, {"axb*()[]{}|?+^$\\"}});
  check({"a{b}c{", {"a{b}c{"}, {"abc"}});  // a '{' that is no quantifier is itself
  check({"héllo", {"héllo"}, {"hello"}});
}

TEST(regex, classes) {
  check({"[a-c]x[^0-9]", {"axz", "cx!", "bxé"}, {"dxz", "ax5", "ax"}});
  check({R"([\d\s_-]+)", {"1 _-\t9"}, {"a"}});
  check({R"(\d\w\s)", {"1a ", "9_\t"}, {"a1 ", "11x"}});
  check({R"(\D\W\S)", {"a!x", "-+é"}, {"1!x", "aax", "a! "}});
  check({"[]a]", {"]", "a"}, {"b"}});
  check({R"([\]\\-])", {"]", "\\", "-"}, {"a"}});
  check({R"([\x41-\x43\u00e9])", {"A", "C", "é"}, {"D"}});
}

TEST(regex, dot_is_any_character_but_line_terminators) {
  check({"a.c", {"abc", "a c", "aéc", "a€c"}, {"a\nc", "a\rc", "ac", "abbc"}});
}

TEST(regex, groups_and_alternation) {
  check({"(ab|cd)+e", {"abe", "cdabe"}, {"e", "abce"}});
  check({"(?:x|y)(?P<n>z)(?<m>w)?", {"xz", "yzw"}, {"xw"}});
  check({"cat|dog|", {"cat", "dog", ""}, {"cow"}});
}

TEST(regex, quantifiers) {
  check({"a*b+c?", {"b", "aabbc", "bc"}, {"", "ac", "abcc"}});
  check({"x{3}", {"xxx"}, {"xx", "xxxx"}});
  check({"x{2,}", {"xx", "xxxxx"}, {"x"}});
  check({"x{1,3}y", {"xy", "xxxy"}, {"y", "xxxxy"}});
  check({"a+?b*?c??", {"a", "abbc"}, {"b"}});  // lazy: the same language
  check({"(a|b){2}c", {"abc", "bbc"}, {"ac", "abbc"}});
}

TEST(regex, anchors_at_the_ends_are_implied) {
  check({"^abc$", {"abc"}, {"xabc", "abcx"}});
  check({R"(\Aab\Z)", {"ab"}, {"abb"}});
  check({"^a|b$", {"a", "b"}, {"ab"}});
}

TEST(regex, escapes_for_characters) {
  check({R"(\n\t\x41\u00e9\uD83D\uDE00)", {"\n\tAé\xF0\x9F\x98\x80"}, {"\n\tA"}});
}

TEST(regex, json_string_output_escapes_what_json_must) {
  // Inside a JSON string the regex's `"` is written \" and a newline \n.
  auto g = compile_ir(
      [] {
        grammar_ir ir;
        ir.root = ir.rule_index("root");
        ir.rules[0].body = parse_regex(R"(a"b\nc.)", regex_output::json_string);
        return ir;
      }(),
      testing::byte_vocabulary());
  EXPECT_TRUE(matches(g, R"(a\"b\nc\\)"));
  EXPECT_TRUE(matches(g, R"(a\"b\ncx)"));
  EXPECT_FALSE(matches(g, "a\"b\\nc\\\\"));
  EXPECT_FALSE(matches(g, "a\\\"b\nc\\\\"));
}

void expect_regex_error(const char* pattern, const char* fragment) {
  try {
    regex(pattern);
    ADD_FAILURE() << "no error for " << pattern;
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(regex, refuses_what_it_cannot_enforce_with_the_offset) {
  expect_regex_error(R"((a)\1)", "at offset 3: backreferences");
  expect_regex_error("a(?=b)", "at offset 1: lookaround");
  expect_regex_error("(?<!a)b", "lookaround");
  expect_regex_error(R"(\bword)", "word boundaries");
  expect_regex_error("(?i)abc", "inline flags");
  expect_regex_error(R"(\p{L})", "Unicode property escapes");
  expect_regex_error("a++", "possessive");
  expect_regex_error("a**", "at offset 2: multiple repeat");
  expect_regex_error("*a", "at offset 0: nothing to repeat");
  expect_regex_error("a^b", "at offset 1: anchors are supported only at the ends");
  expect_regex_error("(a$)b", "anchors");
  expect_regex_error("(ab", "at offset 0: unbalanced '('");
  expect_regex_error("ab)", "at offset 2: unbalanced ')'");
  expect_regex_error("[abc", "unterminated character class");
  expect_regex_error("[z-a]", "character range out of order");
  expect_regex_error("a{3,2}", "repetition maximum below its minimum");
  // Counts too long for the limit are errors, not a literal '{' (every digit is read).
  expect_regex_error("a{99999999999}", "repetition count above");
  expect_regex_error("a{2,99999999999}", "repetition count above");
  expect_regex_error("a{123456789012345678901234567890}", "repetition count above");
  expect_regex_error(R"(\uD800)", "unpaired surrogate");
  expect_regex_error((std::string(5000, '(') + "a" + std::string(5000, ')')).c_str(),
                     "nested deeper than 200");
}

}  // namespace
}  // namespace actorllm::grammar
