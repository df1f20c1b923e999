// Masks against a brute-force oracle: at random reachable states, a token is in the mask
// exactly when the matcher accepts it (tried on every id of the vocabulary). Real tokenizers
// (Llama-2's SentencePiece, Llama-3's and Qwen3's byte-level BPE) and grammars that exercise
// the per-state cache, the stack-dependent tokens (recursion) and ambiguity.
#include <gtest/gtest.h>

#include <random>

#include "grammar/grammar.hpp"
#include "tests/grammar/grammar_tokenizers.hpp"
#include "tests/support/sanitizers.hpp"

namespace actorllm::grammar {
namespace {

using testing::shared_vocabulary;

std::vector<uint32_t> oracle_mask(matcher& m) {
  const size_t n = m.grammar().vocab().mask_size();
  std::vector<uint32_t> mask(m.mask_words(), 0);
  for (size_t id = 0; id < n; ++id) {
    if (m.accept_token(static_cast<int32_t>(id))) {
      mask[id / 32] |= uint32_t{1} << (id % 32);
      EXPECT_TRUE(m.rollback(1));
    }
  }
  return mask;
}

std::vector<int32_t> ids_of(const std::vector<uint32_t>& mask) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < mask.size(); ++w)
    for (int b = 0; b < 32; ++b)
      if ((mask[w] >> b) & 1) out.push_back(static_cast<int32_t>(w * 32 + b));
  return out;
}

// Walks `walks` random paths of up to `steps` tokens, comparing the mask with the oracle at
// every state. Picks short tokens more often so paths cross many grammar states. Under
// AddressSanitizer one walk of each: the oracle's pass over 128k-152k tokens per state is most
// of CI's sanitizer time, and more walks reach more values, not more code.
void check_random_walks(const std::shared_ptr<const compiled_grammar>& g, int walks, int steps,
                        uint32_t seed) {
  if (actorllm::testing::address_sanitized()) walks = 1;
  std::mt19937 rng(seed);
  const vocabulary& vocab = g->vocab();
  size_t compared = 0;
  for (int w = 0; w < walks; ++w) {
    matcher m(g);
    std::string text;
    for (int s = 0; s < steps && !m.is_terminated(); ++s) {
      std::vector<uint32_t> mask(m.mask_words());
      m.fill_mask(mask);
      std::vector<uint32_t> expected = oracle_mask(m);
      ++compared;
      if (mask != expected) {
        auto got = ids_of(mask), want = ids_of(expected);
        std::vector<int32_t> extra, missing;
        std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                            std::back_inserter(extra));
        std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                            std::back_inserter(missing));
        std::string detail;
        for (size_t i = 0; i < std::min<size_t>(extra.size(), 5); ++i)
          detail += " extra " + std::to_string(extra[i]) + " '" +
                    std::string(vocab.bytes(extra[i])) + "'";
        for (size_t i = 0; i < std::min<size_t>(missing.size(), 5); ++i)
          detail += " missing " + std::to_string(missing[i]) + " '" +
                    std::string(vocab.bytes(missing[i])) + "'";
        FAIL() << "after '" << text << "': " << extra.size() << " extra, " << missing.size()
               << " missing:" << detail;
      }
      std::vector<int32_t> allowed = ids_of(mask);
      ASSERT_FALSE(allowed.empty()) << "dead end after '" << text << "'";
      // Prefer short tokens: pick the shortest of three random allowed ones.
      int32_t pick = allowed[rng() % allowed.size()];
      for (int k = 0; k < 2; ++k) {
        int32_t other = allowed[rng() % allowed.size()];
        if (vocab.bytes(other).size() < vocab.bytes(pick).size() && vocab.is_text(other))
          pick = other;
      }
      ASSERT_TRUE(m.accept_token(pick));
      text += vocab.bytes(pick);
      if (std::getenv("GRAMMAR_TEST_VERBOSE") && (s + 1 == steps || m.must_end()))
        std::printf("walk: %s\n", text.c_str());
    }
  }
  if (std::getenv("GRAMMAR_TEST_VERBOSE")) std::printf("%zu states compared\n", compared);
  EXPECT_GT(compared, 0u);
}

const char* const person_schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c d"]}, "maxItems": 3},
    "ok": {"type": "boolean"},
    "score": {"type": "number"}
  },
  "required": ["name", "age"]
})";

const char* const tree_schema = R"({
  "$defs": {"node": {"type": "object",
    "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["v"]}},
  "$ref": "#/$defs/node"
})";

class mask_oracle : public ::testing::TestWithParam<const char*> {};

TEST_P(mask_oracle, json_schema) {
  auto v = shared_vocabulary(GetParam());
  json_schema_options strict{.strict = true};
  check_random_walks(compile_json_schema(std::string_view(person_schema), strict, v), 3, 25, 1);
  check_random_walks(compile_json_schema(std::string_view(person_schema), {}, v), 2, 25, 2);
}

TEST_P(mask_oracle, recursive_schema_and_any_json) {
  auto v = shared_vocabulary(GetParam());
  check_random_walks(compile_json_schema(std::string_view(tree_schema), {.strict = true}, v), 3, 30,
                     3);
  check_random_walks(compile_json_object({}, v), 3, 30, 4);
}

TEST_P(mask_oracle, regex_and_choice) {
  auto v = shared_vocabulary(GetParam());
  check_random_walks(compile_regex(R"((\d{3}-)?[A-Z][a-z]+( [A-Z][a-z]+)*\.)", v), 3, 12, 5);
  std::vector<std::string> choices = {"yes", "no", "maybe so", "yes indeed"};
  check_random_walks(compile_choice(choices, v), 3, 6, 6);
}

TEST_P(mask_oracle, ambiguous_recursive_grammar) {
  // Several positions at once: "a" can start both alternatives, and expr recurses.
  auto v = shared_vocabulary(GetParam());
  auto g = compile_gbnf(R"g(
root ::= expr (" " expr)*
expr ::= term ("+" term)* | term "*" expr
term ::= [a-z]+ | "(" expr ")" | [0-9]+ "." ?
)g",
                        v);
  check_random_walks(g, 3, 25, 7);
}

INSTANTIATE_TEST_SUITE_P(tokenizers, mask_oracle, ::testing::Values("llama2", "llama3", "qwen3"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace actorllm::grammar
