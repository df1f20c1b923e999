// Random bytes and random Unicode through encode and decode: no crash, valid UTF-8 out,
// and the round trip holds for valid UTF-8 text.
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/tokenizer.hpp"
#include "text/unicode.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

struct named_tokenizer {
  const char* name;
  tokenizer tok;
  bool nfc;  // normalizes to NFC, so only NFC text round-trips
};

std::vector<named_tokenizer> load_all() {
  auto dir = testing::shared_dir() / "tokenizers";
  return {{"llama2", tokenizer::load(dir / "llama2"), false},
          {"llama3", tokenizer::load(dir / "llama3"), false},
          {"qwen3", tokenizer::load(dir / "qwen3"), true},
          {"stories260K", tokenizer::load(testing::stories260k_dir()), false}};
}

// Code points from ranges that stress the pre-tokenizer regexes, byte fallback and NFC:
// ASCII, whitespace, Latin-1, combining marks, CJK, Hangul, emoji, and the astral planes.
char32_t random_code_point(std::mt19937& rng) {
  static const std::pair<char32_t, char32_t> ranges[] = {
      {0x20, 0x7E},     {0x20, 0x7E},       {0x20, 0x7E},        {0x09, 0x0D},
      {0xA0, 0xFF},     {0x300, 0x36F},     {0x400, 0x4FF},      {0x4E00, 0x4FFF},
      {0xAC00, 0xACFF}, {0x1F300, 0x1F6FF}, {0x10000, 0x10FFFF}, {0x2000, 0x206F}};
  while (true) {
    auto [lo, hi] = ranges[rng() % std::size(ranges)];
    char32_t cp = lo + rng() % (hi - lo + 1);
    bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    if (!surrogate && cp != 0x2581) return cp;  // "▁" is SentencePiece's space
  }
}

bool has_special(const tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (tok.is_special(id)) return true;
  return false;
}

TEST(tokenizer_fuzz, random_bytes_never_crash) {
  std::mt19937 rng(7);
  for (auto& [name, tok, nfc] : load_all()) {
    for (int round = 0; round < 300; ++round) {
      std::string bytes(rng() % 64, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      auto ids = tok.encode(bytes, round % 2 == 0);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && static_cast<size_t>(id) < tok.vocab_size());
      std::string text = tok.decode(ids, false);
      EXPECT_TRUE(unicode::is_valid_utf8(text)) << name;
      // Invalid bytes became U+FFFD, so the text is the lossy reading of the input.
      if (!has_special(tok, ids) && !nfc) {
        EXPECT_EQ(text, unicode::to_valid_utf8(bytes)) << name << " round " << round;
      }
    }
  }
}

TEST(tokenizer_fuzz, random_unicode_round_trips) {
  std::mt19937 rng(11);
  for (auto& [name, tok, nfc] : load_all()) {
    for (int round = 0; round < 400; ++round) {
      std::string text;
      size_t n = rng() % 48;
      for (size_t i = 0; i < n; ++i) unicode::append_utf8(text, random_code_point(rng));
      auto ids = tok.encode(text, false);
      if (has_special(tok, ids)) continue;
      std::string expected = nfc ? unicode::normalize(text, unicode::normal_form::nfc) : text;
      EXPECT_EQ(tok.decode(ids, false), expected) << name << " round " << round;
    }
  }
}

TEST(tokenizer_fuzz, random_ids_decode_to_valid_utf8) {
  std::mt19937 rng(3);
  for (auto& [name, tok, nfc] : load_all()) {
    std::uniform_int_distribution<int32_t> any(-5, static_cast<int32_t>(tok.vocab_size()) + 5);
    for (int round = 0; round < 200; ++round) {
      std::vector<int32_t> ids(rng() % 32);
      for (auto& id : ids) id = any(rng);
      EXPECT_TRUE(unicode::is_valid_utf8(tok.decode(ids, round % 2 == 0))) << name;
    }
  }
}

}  // namespace
}  // namespace actorllm
