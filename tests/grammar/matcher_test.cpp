// The matcher's contract: EOS and stop ids only where the grammar may end, special tokens
// never, copies are independent forks, rollback restores, and a refused token changes
// nothing.
#include "grammar/matcher.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "grammar/token_mask.hpp"
#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

// ids: 0 "a", 1 "b", 2 "ab", 3 "ba", 4 special "<x>", 5 EOS, 6 "c", 7 "bab"
std::shared_ptr<const vocabulary> small_vocabulary() {
  return vocabulary::from_bytes({"a", "b", "ab", "ba", "<x>", "", "c", "bab"},
                                {false, false, false, false, true}, {5}, 40);
}

std::vector<int32_t> allowed(const matcher& m) {
  std::vector<uint32_t> mask(m.mask_words());
  m.fill_mask(mask);
  std::vector<int32_t> out;
  for (int32_t id = 0; id < 40; ++id)
    if ((mask[id / 32] >> (id % 32)) & 1) out.push_back(id);
  return out;
}

TEST(matcher, eos_and_stop_ids_only_where_the_grammar_may_end) {
  auto g = compile_gbnf(R"(root ::= "a" "b"*)", small_vocabulary());
  matcher m(g, {6, 33});
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{0, 2}));
  EXPECT_FALSE(m.accept_token(5));
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_TRUE(m.can_end());
  // "c" (6) is a stop id here: never text, allowed only as the end.
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1, 5, 6, 33}));
  EXPECT_TRUE(m.accept_token(33));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token(1));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{5, 6, 33}));
}

TEST(matcher, special_tokens_are_never_allowed) {
  auto g = compile_gbnf(R"(root ::= [^\n]*)", small_vocabulary());
  matcher m(g);
  auto ids = allowed(m);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 4), 0);
  EXPECT_FALSE(m.accept_token(4));
  EXPECT_FALSE(m.accept_token(39));  // inside the mask, outside the tokenizer
}

TEST(matcher, a_refused_token_changes_nothing) {
  auto g = compile_gbnf(R"(root ::= "ab" "c")", small_vocabulary());
  matcher m(g);
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_FALSE(m.accept_token(3));  // "ba": the b fits, the a does not
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1}));
  EXPECT_FALSE(m.accept_bytes("bx"));
  EXPECT_TRUE(m.accept_bytes("bc"));
  EXPECT_TRUE(m.must_end());
}

TEST(matcher, copies_are_independent_forks) {
  auto g = compile_gbnf(R"(root ::= ("a" | "b")+ "c")", small_vocabulary());
  matcher parent(g);
  ASSERT_TRUE(parent.accept_token(2));
  matcher fork = parent;
  EXPECT_TRUE(fork.accept_token(6));
  EXPECT_TRUE(fork.can_end());
  EXPECT_FALSE(parent.can_end());
  EXPECT_TRUE(parent.accept_token(7));
  EXPECT_FALSE(parent.can_end());
  EXPECT_EQ(allowed(parent), (std::vector<int32_t>{0, 1, 2, 3, 6, 7}));
  EXPECT_EQ(allowed(fork), (std::vector<int32_t>{5}));
}

TEST(matcher, forks_of_a_recursive_grammar_keep_their_own_stacks) {
  auto g = compile_gbnf(R"(root ::= "a" root "b" | "c")", small_vocabulary());
  matcher m(g);
  ASSERT_TRUE(m.accept_token(0));
  matcher deeper = m;
  ASSERT_TRUE(deeper.accept_token(0));
  ASSERT_TRUE(m.accept_token(6));
  ASSERT_TRUE(deeper.accept_token(6));
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(deeper.accept_token(1));
  EXPECT_FALSE(deeper.can_end());
  EXPECT_EQ(allowed(deeper), (std::vector<int32_t>{1}));
}

TEST(matcher, rollback_restores_earlier_states) {
  auto g = compile_gbnf(R"(root ::= "a" root "b" | "c")", small_vocabulary());
  matcher m(g, {}, 3);
  ASSERT_TRUE(m.accept_token(0));
  auto before = allowed(m);
  ASSERT_TRUE(m.accept_token(0));
  ASSERT_TRUE(m.accept_token(6));
  ASSERT_TRUE(m.accept_token(1));
  EXPECT_FALSE(m.rollback(4));  // only 3 remembered
  EXPECT_TRUE(m.rollback(3));
  EXPECT_EQ(allowed(m), before);
  EXPECT_TRUE(m.accept_token(6));
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.rollback(1));
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.accept_token(5));
  EXPECT_TRUE(m.rollback(1));  // undoes the end too
  EXPECT_FALSE(m.is_terminated());
}

TEST(matcher, masks_cover_tokens_that_span_rules) {
  // "bab" crosses from the inner rule into the outer one and back.
  auto g = compile_gbnf(R"(root ::= "b" inner "b"
inner ::= "a" | "a" inner)",
                        small_vocabulary());
  matcher m(g);
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{1, 3, 7}));
  ASSERT_TRUE(m.accept_token(3));
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{0, 1, 2}));
}

TEST(matcher, masks_apply_to_logits) {
  auto g = compile_gbnf(R"(root ::= "a" "b"*)", small_vocabulary());
  matcher m(g);
  std::vector<uint32_t> mask(m.mask_words());
  m.fill_mask(mask);
  std::vector<float> logits(70, 1.0f);  // longer than the mask covers
  apply_token_mask(logits, mask);
  for (int id = 0; id < 70; ++id) EXPECT_EQ(std::isinf(logits[id]), id != 0 && id != 2) << id;
}

}  // namespace
}  // namespace actorllm::grammar
