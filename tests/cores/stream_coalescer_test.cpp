// The stream interval: the first delta of a choice goes out at once, later ones are gathered
// until `interval` tokens are ready, the last (with its finish reason) flushes what is held,
// choices are gathered apart, and interval 1 changes nothing.
#include "actors/request_router/stream_coalescer.hpp"

#include <gtest/gtest.h>

#include <string>

namespace actorllm {
namespace {

request_output token(int32_t index, int32_t id, finish_reason finish = finish_reason::none) {
  request_output out;
  out.request_id = "r";
  out.index = index;
  out.text = "<" + std::to_string(id) + ">";
  out.token_ids = {id};
  out.token_texts = {out.text};
  out.logprobs = {token_logprob{}};
  out.num_generated_tokens = id;
  out.finish = finish;
  return out;
}

TEST(stream_coalescer, interval_one_passes_every_delta_through) {
  stream_coalescer c(1);
  for (int32_t id = 1; id <= 3; ++id) {
    const auto out = c.add(token(0, id));
    ASSERT_TRUE(out);
    EXPECT_EQ(out->token_ids, std::vector<int32_t>{id});
  }
}

TEST(stream_coalescer, gathers_interval_tokens_after_the_first_and_flushes_on_finish) {
  stream_coalescer c(3);
  std::vector<request_output> sent;
  for (int32_t id = 1; id <= 8; ++id) {
    const auto finish = id == 8 ? finish_reason::length : finish_reason::none;
    if (auto out = c.add(token(0, id, finish))) sent.push_back(*out);
  }
  // 1 | 2 3 4 | 5 6 7 | 8 (finished)
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].token_ids, std::vector<int32_t>({1}));
  EXPECT_EQ(sent[1].token_ids, std::vector<int32_t>({2, 3, 4}));
  EXPECT_EQ(sent[1].text, "<2><3><4>");
  EXPECT_EQ(sent[1].token_texts.size(), 3u);
  EXPECT_EQ(sent[1].logprobs.size(), 3u);
  EXPECT_EQ(sent[1].num_generated_tokens, 4);
  EXPECT_EQ(sent[2].token_ids, std::vector<int32_t>({5, 6, 7}));
  EXPECT_EQ(sent[3].token_ids, std::vector<int32_t>({8}));
  EXPECT_EQ(sent[3].finish, finish_reason::length);
}

TEST(stream_coalescer, a_finish_flushes_the_held_tokens_with_it) {
  stream_coalescer c(4);
  ASSERT_TRUE(c.add(token(0, 1)));
  EXPECT_FALSE(c.add(token(0, 2)));
  const auto last = c.add(token(0, 3, finish_reason::stop));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->token_ids, std::vector<int32_t>({2, 3}));
  EXPECT_EQ(last->text, "<2><3>");
  EXPECT_EQ(last->finish, finish_reason::stop);
}

TEST(stream_coalescer, choices_are_gathered_apart) {
  stream_coalescer c(2);
  ASSERT_TRUE(c.add(token(0, 1)));
  ASSERT_TRUE(c.add(token(1, 1)));
  EXPECT_FALSE(c.add(token(0, 2)));
  EXPECT_FALSE(c.add(token(1, 2)));
  const auto zero = c.add(token(0, 3));
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->index, 0);
  EXPECT_EQ(zero->token_ids, std::vector<int32_t>({2, 3}));
  const auto one = c.add(token(1, 3, finish_reason::length));
  ASSERT_TRUE(one);
  EXPECT_EQ(one->index, 1);
  EXPECT_EQ(one->token_ids, std::vector<int32_t>({2, 3}));
}

}  // namespace
}  // namespace actorllm
