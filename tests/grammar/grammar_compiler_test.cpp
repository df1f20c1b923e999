// grammar_compiler: each kind of constraint compiles, the same spec is compiled once and then
// found, the cache drops its least recently used grammar, the vocabulary is built on first
// use only, and a Lark grammar is named as such.
#include "grammar/grammar_compiler.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "grammar/grammar_error.hpp"
#include "grammar/matcher.hpp"

namespace actorllm::grammar {
namespace {

std::shared_ptr<const vocabulary> printable_ascii_vocabulary() {
  std::vector<std::string> bytes{""};
  std::vector<bool> special{true};
  for (int c = 32; c < 127; ++c) {
    bytes.emplace_back(1, static_cast<char>(c));
    special.push_back(false);
  }
  return vocabulary::from_bytes(bytes, special, {0});
}

structured_output spec(output_constraint kind, std::string source) {
  structured_output s;
  s.kind = kind;
  s.source = std::move(source);
  return s;
}

bool accepts(const std::shared_ptr<const compiled_grammar>& g, const std::string& text) {
  matcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(grammar_compiler, every_kind_compiles_and_a_repeat_is_found_not_rebuilt) {
  int built = 0;
  grammar_compiler compiler([&] {
    ++built;
    return printable_ascii_vocabulary();
  });
  EXPECT_EQ(built, 0);  // nothing until a constrained request arrives
  const auto regex = compiler.compile(spec(output_constraint::regex, "a+b"));
  EXPECT_EQ(built, 1);
  EXPECT_TRUE(accepts(regex, "aab"));
  EXPECT_FALSE(accepts(regex, "ba"));
  EXPECT_TRUE(
      accepts(compiler.compile(spec(output_constraint::grammar, R"(root ::= "x" [0-9])")), "x7"));
  EXPECT_TRUE(accepts(
      compiler.compile(spec(output_constraint::json_schema, R"({"type":"integer"})")), "42"));
  EXPECT_TRUE(accepts(compiler.compile(spec(output_constraint::json_object, "")), "{}"));
  auto choice = spec(output_constraint::choice, "");
  choice.choices = {"yes", "no"};
  EXPECT_TRUE(accepts(compiler.compile(choice), "no"));
  EXPECT_EQ(compiler.num_compiled(), 5u);

  EXPECT_EQ(compiler.compile(spec(output_constraint::regex, "a+b")), regex);
  EXPECT_EQ(compiler.num_compiled(), 5u);
  EXPECT_EQ(compiler.num_cache_hits(), 1u);
  EXPECT_EQ(built, 1);
  // Whitespace rules make a different grammar of the same schema.
  auto strict = spec(output_constraint::json_schema, R"({"type":"integer"})");
  strict.compact_whitespace = true;
  (void)compiler.compile(strict);
  EXPECT_EQ(compiler.num_compiled(), 6u);
}

TEST(grammar_compiler, the_least_recently_used_grammar_is_dropped_first) {
  grammar_compiler compiler(printable_ascii_vocabulary, 2);
  const auto a = compiler.compile(spec(output_constraint::regex, "a"));
  (void)compiler.compile(spec(output_constraint::regex, "b"));
  EXPECT_EQ(compiler.compile(spec(output_constraint::regex, "a")), a);  // a is now the newest
  (void)compiler.compile(spec(output_constraint::regex, "c"));          // drops b
  EXPECT_EQ(compiler.num_compiled(), 3u);
  EXPECT_EQ(compiler.compile(spec(output_constraint::regex, "a")), a);
  (void)compiler.compile(spec(output_constraint::regex, "b"));
  EXPECT_EQ(compiler.num_compiled(), 4u);
}

// The cache is bounded by memory too: token caches grow as requests use a grammar.
TEST(grammar_compiler, grammars_past_the_byte_budget_are_dropped_oldest_first) {
  grammar_compiler unbounded(printable_ascii_vocabulary, 256, SIZE_MAX);
  const auto one = unbounded.compile(spec(output_constraint::regex, "[a-z]{1,40}"));
  one->precompute();
  const size_t each = unbounded.cached_bytes();
  ASSERT_GT(each, 0u);

  grammar_compiler compiler(printable_ascii_vocabulary, 256, 2 * each + each / 2);
  for (const char* pattern : {"[a-z]{1,40}", "[b-z]{1,40}", "[c-z]{1,40}", "[d-z]{1,40}"}) {
    compiler.compile(spec(output_constraint::regex, pattern))->precompute();
    EXPECT_LE(compiler.num_cached(), 3u) << pattern;
  }
  // Three filled grammars do not fit two and a half grammars' bytes; the newest stays.
  (void)compiler.compile(spec(output_constraint::regex, "[e-z]{1,40}"));
  EXPECT_LE(compiler.cached_bytes(), 2 * each + each / 2 + each);
  EXPECT_LT(compiler.num_cached(), 5u);
  const size_t before = compiler.num_compiled();
  (void)compiler.compile(spec(output_constraint::regex, "[a-z]{1,40}"));  // the oldest went
  EXPECT_EQ(compiler.num_compiled(), before + 1);
  // One grammar over the budget by itself is still kept: a request is following it.
  grammar_compiler tiny(printable_ascii_vocabulary, 256, 1);
  const auto kept = tiny.compile(spec(output_constraint::regex, "x+"));
  EXPECT_EQ(tiny.num_cached(), 1u);
  EXPECT_EQ(tiny.compile(spec(output_constraint::regex, "x+")), kept);
}

TEST(grammar_compiler, keys_keep_every_field_apart) {
  auto ab = spec(output_constraint::choice, "");
  ab.choices = {"a", "b"};
  auto joined = spec(output_constraint::choice, "");
  joined.choices = {"ab"};
  EXPECT_NE(grammar_key(ab), grammar_key(joined));
  EXPECT_NE(grammar_key(spec(output_constraint::regex, "x")),
            grammar_key(spec(output_constraint::grammar, "x")));
}

TEST(grammar_compiler, a_lark_grammar_is_named_and_a_gbnf_error_keeps_its_message) {
  grammar_compiler compiler(printable_ascii_vocabulary);
  for (const char* lark : {"start: \"a\" item\nitem: /[0-9]+/", "%import common.WS\n?value: x"}) {
    try {
      (void)compiler.compile(spec(output_constraint::grammar, lark));
      FAIL() << "compiled " << lark;
    } catch (const grammar_error& e) {
      EXPECT_NE(std::string(e.what()).find("Lark"), std::string::npos) << e.what();
    }
  }
  try {
    (void)compiler.compile(spec(output_constraint::grammar, "root ::= missing"));
    FAIL();
  } catch (const grammar_error& e) {
    EXPECT_EQ(std::string(e.what()).find("Lark"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace actorllm::grammar
