#include "tool_calls/pythonic_parser.hpp"

#include <gtest/gtest.h>

#include "tests/tool_calls/stream_check.hpp"
#include "tool_calls/python_literal.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::expect_chunking_invariant;
using testing::parse_text;

testing::parser_factory pythonic() {
  tool_parser_options options;
  options.id_seed = 3;
  return [options] { return std::make_unique<pythonic_parser>(options); };
}

// The literal as json.dumps(ast.literal_eval(text)) writes it, or "error".
std::string literal_to_json(std::string_view text) {
  python_literal_reader reader(8);
  for (char c : text) {
    const auto s = reader.feed(c);
    if (s == python_literal_reader::status::error) return "error";
    if (s != python_literal_reader::status::more) return reader.json();
  }
  // A top-level number or word ends only at the next byte.
  const auto s = reader.feed(')');
  return s == python_literal_reader::status::done_before ? reader.json() : "error";
}

TEST(python_literal, scalars_as_json_dumps_writes_them) {
  EXPECT_EQ(literal_to_json("'Paris'"), "\"Paris\"");
  EXPECT_EQ(literal_to_json("\"it's\""), "\"it's\"");
  EXPECT_EQ(literal_to_json("'say \"hi\"'"), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(literal_to_json("'a\\nb\\tc\\\\d\\'e'"), "\"a\\nb\\tc\\\\d'e\"");
  EXPECT_EQ(literal_to_json("'\\x41\\u00e9\\0'"), "\"A\\u00e9\\u0000\"");
  EXPECT_EQ(literal_to_json("'caf\xc3\xa9'"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(literal_to_json("42"), "42");
  EXPECT_EQ(literal_to_json("-3.5"), "-3.5");
  EXPECT_EQ(literal_to_json("1."), "1.0");
  EXPECT_EQ(literal_to_json(".5"), "0.5");
  EXPECT_EQ(literal_to_json("1_000"), "1000");
  EXPECT_EQ(literal_to_json("2E-3"), "2e-3");
  EXPECT_EQ(literal_to_json("True"), "true");
  EXPECT_EQ(literal_to_json("False"), "false");
  EXPECT_EQ(literal_to_json("None"), "null");
}

TEST(python_literal, containers) {
  EXPECT_EQ(literal_to_json("[1, 'a', None]"), "[1, \"a\", null]");
  EXPECT_EQ(literal_to_json("(1,2,)"), "[1, 2]");
  EXPECT_EQ(literal_to_json("{'a': [1, {'b': True}], \"c\": ()}"),
            "{\"a\": [1, {\"b\": true}], \"c\": []}");
  EXPECT_EQ(literal_to_json("[]"), "[]");
  EXPECT_EQ(literal_to_json("{}"), "{}");
}

TEST(python_literal, refuses_what_is_not_a_literal) {
  for (std::string_view text :
       {"x", "true", "null", "f(1)", "{1: 2}", "{'a' 1}", "{'a': }", "[1 2]", "01", "1e", "--1",
        "inf", "'a\nb'", "[,]", "{'a': 1,,}", "[[[[[[[[[1]]]]]]]]]"}) {
    EXPECT_EQ(literal_to_json(text), "error") << text;
  }
}

// Llama 3.2 / 4 style, per vLLM's pythonic documentation.
TEST(pythonic_parser, calls_with_keyword_literals) {
  const std::string text =
      "[get_weather(city='San Francisco', metric='celsius', days=3), "
      "register_user(name=\"John Doe\", age=37, address={'city': 'San Francisco', 'state': 'CA'}, "
      "role=None, passed_test=True, aliases=['John', 'Johnny'])]";
  const parsed_output out = parse_text(pythonic(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments,
            "{\"city\": \"San Francisco\", \"metric\": \"celsius\", \"days\": 3}");
  EXPECT_EQ(out.calls[1].arguments,
            "{\"name\": \"John Doe\", \"age\": 37, \"address\": {\"city\": \"San Francisco\", "
            "\"state\": \"CA\"}, \"role\": null, \"passed_test\": true, \"aliases\": [\"John\", "
            "\"Johnny\"]}");
  expect_chunking_invariant(pythonic(), text);
}

TEST(pythonic_parser, no_arguments_spaces_and_llama4_tags) {
  const std::string text = "<|python_start|>[ get_time( ) , ping(host = 'a.b') ]<|python_end|>";
  const parsed_output out = parse_text(pythonic(), text);
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_EQ(out.calls[0].arguments, "{}");
  EXPECT_EQ(out.calls[1].arguments, "{\"host\": \"a.b\"}");
  expect_chunking_invariant(pythonic(), text);
}

TEST(pythonic_parser, anything_but_a_list_of_calls_is_content) {
  for (std::string_view text : {"The answer is 4.", "[1, 2, 3]", "[Note] read this", "[]", "[f]",
                                "  [f (a=1)]", "<|python_start|>hello", "[", "[f"}) {
    const parsed_output out = parse_text(pythonic(), text);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
    expect_chunking_invariant(pythonic(), text);
  }
}

TEST(pythonic_parser, errors_after_the_commit) {
  // A positional argument: the call was announced at '(', so it stays; the rest is content.
  const std::string positional = "[f(1, a=2)]";
  const parsed_output p = parse_text(pythonic(), positional);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{");
  EXPECT_EQ(p.content, "1, a=2)]");
  expect_chunking_invariant(pythonic(), positional);
  // Text after the list.
  const std::string after = "[f(a=1)] That is all.";
  const parsed_output a = parse_text(pythonic(), after);
  ASSERT_EQ(a.calls.size(), 1u);
  EXPECT_EQ(a.content, "That is all.");
  expect_chunking_invariant(pythonic(), after);
}

TEST(pythonic_parser, cut_output_keeps_the_arguments_so_far) {
  const std::string text = "[f(a=1, b='x";
  const parsed_output out = parse_text(pythonic(), text);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].arguments, "{\"a\": 1, \"b\": \"x");
  expect_chunking_invariant(pythonic(), text);
}

}  // namespace
}  // namespace actorllm::tool_calls
