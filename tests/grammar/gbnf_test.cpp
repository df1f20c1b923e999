// GBNF: each construct accepts what it should and refuses the rest; bad grammars are
// refused with their position.
#include <gtest/gtest.h>

#include "grammar/automaton_builder.hpp"
#include "grammar/gbnf_parser.hpp"
#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

using testing::gbnf;
using testing::is_prefix;
using testing::matches;

TEST(gbnf, literal_and_sequence) {
  auto g = gbnf(R"(root ::= "ab" "c")");
  EXPECT_TRUE(matches(g, "abc"));
  EXPECT_FALSE(matches(g, "ab"));
  EXPECT_FALSE(matches(g, "abcd"));
  EXPECT_TRUE(is_prefix(g, "ab"));
  EXPECT_FALSE(is_prefix(g, "b"));
}

TEST(gbnf, alternation_and_groups) {
  auto g = gbnf(R"(root ::= ("cat" | "dog") ("s" | ""))");
  for (const char* ok : {"cat", "dog", "cats", "dogs"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"", "ca", "cow", "catss"}) EXPECT_FALSE(matches(g, bad)) << bad;
}

TEST(gbnf, repetition_operators) {
  auto star = gbnf(R"(root ::= "a"*)");
  EXPECT_TRUE(matches(star, ""));
  EXPECT_TRUE(matches(star, "aaaa"));
  EXPECT_FALSE(matches(star, "ab"));
  auto plus = gbnf(R"(root ::= "a"+)");
  EXPECT_FALSE(matches(plus, ""));
  EXPECT_TRUE(matches(plus, "aaa"));
  auto opt = gbnf(R"(root ::= "x" "a"? "y")");
  EXPECT_TRUE(matches(opt, "xy"));
  EXPECT_TRUE(matches(opt, "xay"));
  EXPECT_FALSE(matches(opt, "xaay"));
}

TEST(gbnf, bounded_repetition) {
  auto exact = gbnf(R"(root ::= [0-9]{3})");
  EXPECT_TRUE(matches(exact, "123"));
  EXPECT_FALSE(matches(exact, "12"));
  EXPECT_FALSE(matches(exact, "1234"));
  auto range = gbnf(R"(root ::= "a"{2,4})");
  EXPECT_FALSE(matches(range, "a"));
  for (const char* ok : {"aa", "aaa", "aaaa"}) EXPECT_TRUE(matches(range, ok)) << ok;
  EXPECT_FALSE(matches(range, "aaaaa"));
  auto at_least = gbnf(R"(root ::= "a"{2,})");
  EXPECT_FALSE(matches(at_least, "a"));
  EXPECT_TRUE(matches(at_least, "aaaaaaa"));
  auto at_most = gbnf(R"(root ::= "a"{,2})");
  EXPECT_TRUE(matches(at_most, ""));
  EXPECT_TRUE(matches(at_most, "aa"));
  EXPECT_FALSE(matches(at_most, "aaa"));
}

TEST(gbnf, character_classes) {
  auto g = gbnf(R"(root ::= [a-cx] [^0-9\n] .)");
  EXPECT_TRUE(matches(g, "a!z"));
  EXPECT_TRUE(matches(g, "xé€"));  // classes and '.' read whole UTF-8 characters
  EXPECT_FALSE(matches(g, "d!z"));
  EXPECT_FALSE(matches(g, "a5z"));
  EXPECT_FALSE(matches(g, "a\nz"));
  EXPECT_FALSE(matches(g, "a!"));
  EXPECT_FALSE(matches(g, "a!\xff"));  // never invalid UTF-8
  auto unicode = gbnf(R"(root ::= [α-ω]+)");
  EXPECT_TRUE(matches(unicode, "λμ"));
  EXPECT_FALSE(matches(unicode, "λA"));
}

TEST(gbnf, escapes) {
  auto g = gbnf(R"(root ::= "\"\\\n\t" [\x41-\x43] "\u00e9" [\]] "\U0001F600")");
  EXPECT_TRUE(matches(g, "\"\\\n\tB\xC3\xA9]\xF0\x9F\x98\x80"));
  EXPECT_FALSE(matches(g, "\"\\\n\tD\xC3\xA9]\xF0\x9F\x98\x80"));
}

TEST(gbnf, rules_recursion_and_comments) {
  auto g = gbnf(R"g(
    # balanced parentheses, then a word
    root  ::= parens " " word
    parens ::= "(" parens ")" parens | ""
    word  ::= [a-z]+   # trailing comment
  )g");
  EXPECT_TRUE(matches(g, "(()()) ok"));
  EXPECT_TRUE(matches(g, " ok"));
  EXPECT_FALSE(matches(g, "(() ok"));
  EXPECT_FALSE(matches(g, "()) ok"));
}

TEST(gbnf, bodies_span_lines_until_the_next_rule) {
  auto g = gbnf("root ::= \"a\"\n  | \"b\"\n  \"c\"\nother ::= \"z\"\n");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_TRUE(matches(g, "bc"));
  EXPECT_FALSE(matches(g, "b"));
}

TEST(gbnf, json_grammar_from_llama_cpp) {
  auto g = gbnf(R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4})
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-7]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)");
  EXPECT_TRUE(matches(g, R"({"a": [1, 2.5, {"b": null}], "c": "x\"y"})"));
  EXPECT_FALSE(matches(g, R"({"a": [1, 2.5, {"b": nul}]})"));
  EXPECT_FALSE(matches(g, R"({"a" 1})"));
}

TEST(gbnf, right_recursion_keeps_a_constant_stack) {
  auto g = gbnf(R"(root ::= "a" root | "b")");
  matcher m(g);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(m.accept_bytes("a"));
  EXPECT_EQ(m.num_positions(), 1u);
  EXPECT_TRUE(m.accept_bytes("b"));
  EXPECT_TRUE(m.can_end());
}

void expect_gbnf_error(const std::string& grammar, std::string_view fragment) {
  try {
    gbnf(grammar);
    ADD_FAILURE() << "no error for: " << grammar;
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(gbnf, errors_name_the_problem_and_position) {
  expect_gbnf_error("root ::= \"a", "line 1, column 10: unterminated string literal");
  expect_gbnf_error("root ::= foo", "line 1, column 10: undefined rule 'foo'");
  expect_gbnf_error("start ::= \"a\"", "no rule named 'root'");
  expect_gbnf_error("root ::= \"a\"\nroot ::= \"b\"",
                    "line 2, column 1: rule 'root' is defined twice");
  expect_gbnf_error("root ::= (\"a\"", "expected ')'");
  expect_gbnf_error("root ::= [b-a]", "character range out of order");
  expect_gbnf_error("root ::= \"a\"{3,2}", "repetition maximum below its minimum");
  expect_gbnf_error("root ::= \"\\q\"", "unknown escape");
  expect_gbnf_error("root ::= <think>", "token references");
  expect_gbnf_error("root ::= x\nx ::= x \"a\" | \"b\"", "left recursion");
  expect_gbnf_error("root ::= x\nx ::= \"a\" x", "matches no text");
  expect_gbnf_error("root ::= \"a\" root ::= \"b\"", "line 1, column 14");
}

TEST(gbnf, grammars_beyond_the_state_limit_are_refused_by_rule) {
  automaton_limits limits;
  limits.max_states = 1000;
  EXPECT_NO_THROW(build_automaton(parse_gbnf(R"(root ::= [a-z]{100})"), limits));
  try {
    build_automaton(parse_gbnf("root ::= item{2000}\nitem ::= [a-z]+ \",\" "), limits);
    ADD_FAILURE() << "no error";
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find("grammar too large: rule 'root' needs more than 1000"),
              std::string::npos)
        << e.what();
  }
  // A regular expression whose DFA has 2^(n+1) states.
  EXPECT_THROW(compile_regex("(a|b)*a(a|b){20}", testing::byte_vocabulary()), grammar_error);
}

TEST(gbnf, grammars_past_the_time_budget_are_refused_by_rule) {
  // Within its state limit, but not within a microsecond: the build stops at the budget.
  automaton_limits limits;
  limits.max_seconds = 1e-6;
  const grammar_ir slow = parse_gbnf("root ::= item{1500}\nitem ::= [a-z]+ \",\" ");
  try {
    build_automaton(slow, limits);
    ADD_FAILURE() << "no error";
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find("grammar too slow to compile: past its budget of 1e-06 s"),
              std::string::npos)
        << e.what();
  }
  limits.max_seconds = 0;  // no budget
  EXPECT_NO_THROW(build_automaton(slow, limits));
}

TEST(gbnf, nesting_is_bounded_instead_of_overflowing_the_stack) {
  expect_gbnf_error("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')'),
                    "nested deeper than 200");
  expect_gbnf_error("root ::= \"a\"*+?*+?", "more than four repetition operators");
  EXPECT_TRUE(
      matches(gbnf("root ::= " + std::string(150, '(') + "\"a\"" + std::string(150, ')')), "a"));
}

TEST(gbnf, unreachable_rules_that_match_nothing_are_fine) {
  auto g = gbnf("root ::= \"a\" | never\nnever ::= \"b\" never");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_FALSE(matches(g, "b"));
}

}  // namespace
}  // namespace actorllm::grammar
