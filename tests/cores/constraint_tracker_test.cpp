// The worker's structured-output state: whatever the tracker has seen, the mask of a draw is
// the mask of a fresh matcher fed the sequence's generated tokens — after a restart (nothing
// seen), a fork (another sample's tokens) or a sample the scheduler dropped (tokens that
// differ from what was accepted).
#include "actors/gpu_worker/constraint_tracker.hpp"

#include <gtest/gtest.h>

#include "grammar/grammar.hpp"
#include "tests/support/test_data.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {
namespace {

class constraint_tracker_test : public ::testing::Test {
 protected:
  void SetUp() override {
    const tokenizer tok = tokenizer::load(testing::stories260k_dir());
    vocab_ = grammar::vocabulary::from_tokenizer(tok);
    compiler_ = std::make_shared<grammar::grammar_compiler>([v = vocab_] { return v; });
    params_.structured.kind = output_constraint::regex;
    params_.structured.source = "(ab|cd)+e";
  }

  /// A draw of sample `index` after the prompt {1} and `generated`.
  batch_sequence draw(const std::vector<int32_t>& generated, int32_t index = 0) {
    tokens_ = {1};
    tokens_.insert(tokens_.end(), generated.begin(), generated.end());
    batch_sequence s;
    s.seq = 7;
    s.request_id = &request_id_;
    s.index = index;
    s.params = &params_;
    s.num_prompt_tokens = 1;
    s.start_position = static_cast<int32_t>(tokens_.size()) - 1;
    s.token_ids = std::span<const int32_t>(tokens_).last(1);
    s.all_token_ids = tokens_;
    s.num_samples = 1;
    return s;
  }

  /// What a fresh matcher fed `generated` allows next.
  std::vector<uint32_t> expected_mask(const std::vector<int32_t>& generated) {
    grammar::matcher m(compiler_->compile(params_.structured));
    for (int32_t id : generated) EXPECT_TRUE(m.accept_token(id)) << id;
    std::vector<uint32_t> mask(m.mask_words());
    m.fill_mask(mask);
    return mask;
  }

  std::vector<uint32_t> tracked_mask(constraint_tracker& t, const std::vector<int32_t>& generated,
                                     int32_t index = 0) {
    const std::vector<batch_sequence> work{draw(generated, index)};
    t.prepare(work);
    t.wait();
    const auto m = t.mask(0);
    return {m.begin(), m.end()};
  }

  int32_t id(const std::string& piece) const {
    for (int32_t i = 0; i < static_cast<int32_t>(vocab_->mask_size()); ++i)
      if (vocab_->bytes(i) == piece) return i;
    ADD_FAILURE() << "no token for " << piece;
    return 0;
  }

  std::shared_ptr<const grammar::vocabulary> vocab_;
  std::shared_ptr<grammar::grammar_compiler> compiler_;
  sampling_params params_;
  std::string request_id_ = "r";
  std::vector<int32_t> tokens_;
};

TEST_F(constraint_tracker_test, a_fresh_tracker_replays_the_generated_tokens) {
  const std::vector<int32_t> generated{id("a"), id("b"), id("c")};
  constraint_tracker restarted(compiler_, {});
  EXPECT_EQ(tracked_mask(restarted, generated), expected_mask(generated));
  EXPECT_NE(expected_mask(generated), expected_mask({}));
  EXPECT_EQ(restarted.num_rejected(), 0);
}

TEST_F(constraint_tracker_test, accepted_draws_move_the_matcher_on) {
  constraint_tracker t(compiler_, {});
  EXPECT_EQ(tracked_mask(t, {}), expected_mask({}));
  t.accept(draw({}), 0, id("a"));
  EXPECT_EQ(tracked_mask(t, {id("a")}), expected_mask({id("a")}));
  t.accept(draw({id("a")}), 0, id("b"));
  EXPECT_EQ(tracked_mask(t, {id("a"), id("b")}), expected_mask({id("a"), id("b")}));
}

TEST_F(constraint_tracker_test, tokens_that_differ_from_what_was_accepted_rebuild_the_matcher) {
  constraint_tracker t(compiler_, {});
  (void)tracked_mask(t, {});
  t.accept(draw({}), 0, id("a"));  // then the sequence went on with "c" instead
  EXPECT_EQ(tracked_mask(t, {id("c"), id("d")}), expected_mask({id("c"), id("d")}));
  EXPECT_EQ(t.num_rejected(), 0);
}

TEST_F(constraint_tracker_test, each_sample_index_has_its_own_matcher_and_forget_drops_it) {
  constraint_tracker t(compiler_, {});
  (void)tracked_mask(t, {});
  t.accept(draw({}), 0, id("a"));
  t.accept(draw({}), 1, id("c"));  // the first draw of n = 2: both from the start
  EXPECT_EQ(t.num_matchers(), 2u);
  EXPECT_EQ(tracked_mask(t, {id("c")}, 1), expected_mask({id("c")}));
  EXPECT_EQ(tracked_mask(t, {id("a")}, 0), expected_mask({id("a")}));
  t.forget({"r", 1});
  EXPECT_EQ(t.num_matchers(), 1u);
}

TEST_F(constraint_tracker_test, a_draw_the_grammar_refuses_is_counted) {
  constraint_tracker t(compiler_, {});
  (void)tracked_mask(t, {});
  t.accept(draw({}), 0, id("e"));  // "e" cannot start (ab|cd)+e
  EXPECT_EQ(t.num_rejected(), 1);
}

TEST_F(constraint_tracker_test, after_reasoning_the_constraint_starts_behind_the_end_marker) {
  const int32_t end = id("e");  // stands for "</think>" in this small vocabulary
  params_.structured.after_reasoning = true;
  constraint_tracker t(compiler_, {}, end);
  // Reasoning: any token, no mask, nothing accepted (even what the grammar would refuse).
  EXPECT_TRUE(tracked_mask(t, {id("x")}).empty());
  t.accept(draw({id("x")}), 0, end);
  EXPECT_EQ(t.num_matchers(), 0u);
  // After the marker the grammar starts from its beginning.
  EXPECT_EQ(tracked_mask(t, {id("x"), end}), expected_mask({}));
  t.accept(draw({id("x"), end}), 0, id("a"));
  EXPECT_EQ(tracked_mask(t, {id("x"), end, id("a")}), expected_mask({id("a")}));
  EXPECT_EQ(t.num_rejected(), 0);
  // A prompt that closed the reasoning already (thinking turned off): constrained at once.
  tokens_ = {};
  auto closed = draw({});
  std::vector<int32_t> prompt{1, end};
  closed.all_token_ids = prompt;
  closed.num_prompt_tokens = 2;
  closed.start_position = 1;
  closed.token_ids = std::span<const int32_t>(prompt).last(1);
  constraint_tracker u(compiler_, {}, end);
  u.prepare({closed});
  u.wait();
  const auto m = u.mask(0);
  EXPECT_EQ(std::vector<uint32_t>(m.begin(), m.end()), expected_mask({}));
}

TEST_F(constraint_tracker_test, free_draws_have_no_mask_and_no_compiler_is_an_error) {
  constraint_tracker t(nullptr, {});
  params_.structured = {};
  EXPECT_TRUE(tracked_mask(t, {}).empty());
  params_.structured.kind = output_constraint::regex;
  params_.structured.source = "a";
  const std::vector<batch_sequence> work{draw({})};
  EXPECT_THROW(t.prepare(work), std::runtime_error);
}

}  // namespace
}  // namespace actorllm
