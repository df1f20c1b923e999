// Streaming detokenization: the deltas concatenate to the full decode and are valid UTF-8.
#include "tokenizer/incremental_detokenizer.hpp"

#include <gtest/gtest.h>

#include <random>

#include "text/unicode.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

const std::string sample_text =
    "Hello world! Grüße, naïve café. 你好，世界 🦙🦙 llamas… \n\n  "
    "indented\tcode();\n"
    "Привет мир. 1234567 + 89 = ?";

std::vector<tokenizer> all_tokenizers() {
  auto dir = testing::shared_dir() / "tokenizers";
  return {tokenizer::load(dir / "llama2"), tokenizer::load(dir / "llama3"),
          tokenizer::load(dir / "qwen3"), tokenizer::load(testing::stories260k_dir())};
}

std::string stream(const tokenizer& tok, const std::vector<int32_t>& ids, bool skip,
                   std::span<const int32_t> prompt = {}) {
  incremental_detokenizer detok(tok, skip, prompt);
  std::string all;
  for (int32_t id : ids) {
    std::string delta = detok.push(id);
    EXPECT_TRUE(unicode::is_valid_utf8(delta));
    all += delta;
  }
  all += detok.finish();
  EXPECT_EQ(all, detok.text());
  return all;
}

TEST(incremental_detokenizer, real_text_streams_to_full_decode) {
  for (const auto& tok : all_tokenizers()) {
    auto ids = tok.encode(sample_text, false);
    EXPECT_EQ(stream(tok, ids, false), tok.decode(ids, false));
    EXPECT_EQ(stream(tok, ids, false), sample_text);
  }
}

TEST(incremental_detokenizer, multibyte_characters_are_held_back) {
  auto tok = tokenizer::load(testing::stories260k_dir());
  auto ids = tok.encode("\xF0\x9F\xA6\x99", false);  // four <0xNN> byte tokens
  incremental_detokenizer detok(tok, false);
  for (int32_t id : ids) EXPECT_EQ(detok.push(id), "");
  // A byte run is decoded as a whole, so it is released when a non-byte piece follows.
  EXPECT_EQ(detok.push(tok.encode(" a", false).back()), "\xF0\x9F\xA6\x99 a");
  EXPECT_EQ(detok.finish(), "");
}

TEST(incremental_detokenizer, prompt_gives_leading_space) {
  auto tok = tokenizer::load(testing::stories260k_dir());
  auto prompt = tok.encode("Once upon", true);
  auto gen = tok.encode(" a time", false);
  std::vector<int32_t> both = prompt;
  // Encode " a time" alone has its own leading "▁"; in context the SentencePiece text is the
  // continuation of the prompt's decode.
  both.insert(both.end(), gen.begin(), gen.end());
  std::string full = tok.decode(both, true);
  std::string head = tok.decode(prompt, true);
  EXPECT_EQ(stream(tok, gen, true, prompt), full.substr(head.size()));
}

TEST(incremental_detokenizer, random_ids_match_full_decode) {
  std::mt19937 rng(1234);
  for (const auto& tok : all_tokenizers()) {
    std::uniform_int_distribution<int32_t> any(0, static_cast<int32_t>(tok.vocab_size()) - 1);
    for (int round = 0; round < 40; ++round) {
      std::vector<int32_t> ids(1 + rng() % 40);
      for (auto& id : ids) id = any(rng);
      for (bool skip : {false, true})
        EXPECT_EQ(stream(tok, ids, skip), tok.decode(ids, skip)) << "round " << round;
    }
  }
}

TEST(incremental_detokenizer, byte_tokens_match_full_decode) {
  // Byte tokens in random order create incomplete and invalid sequences everywhere.
  std::mt19937 rng(99);
  auto tok = tokenizer::load(testing::stories260k_dir());
  for (int round = 0; round < 200; ++round) {
    std::vector<int32_t> ids(1 + rng() % 20);
    for (auto& id : ids)
      id = rng() % 4 == 0 ? 3 + static_cast<int32_t>(rng() % 256)
                          : 259 + static_cast<int32_t>(rng() % 250);
    EXPECT_EQ(stream(tok, ids, false), tok.decode(ids, false)) << "round " << round;
  }
}

}  // namespace
}  // namespace actorllm
