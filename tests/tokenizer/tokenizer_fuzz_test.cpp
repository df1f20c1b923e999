// Random bytes and random Unicode through encode and decode: no crash, valid UTF-8 out, invalid
// bytes read as U+FFFD per maximal subpart, and the round trip holds for valid UTF-8 text. The
// oracle is written out here from the Unicode standard, independent of text/unicode.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/test_data.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {
namespace {

// --- The reference: UTF-8 as Unicode 15, section 3.9, defines it. ---

/// The UTF-8 bytes of scalar value `cp` (Table 3-6).
void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// The well-formed sequence or the maximal subpart at s[pos] (Table 3-7): how many bytes of a
/// well-formed sequence start there, and whether they complete one.
struct subpart {
  size_t length;
  bool complete;
  char32_t cp;  // when complete
};

subpart read_sequence(std::string_view s, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(pos);
  if (lead < 0x80) return {1, true, lead};
  // Number of continuation bytes and the allowed range of the first one, by lead byte.
  size_t trail = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    trail = 1, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    trail = 2, cp = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;  // no overlong forms
    if (lead == 0xED) hi = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    trail = 3, cp = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;  // no overlong forms
    if (lead == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return {1, false, 0};  // C0, C1, F5..FF and a stray continuation byte
  }
  for (size_t i = 1; i <= trail; ++i) {
    if (pos + i >= s.size()) return {i, false, 0};
    const unsigned char b = byte(pos + i);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return {i, false, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {trail + 1, true, cp};
}

/// The scalar values of `s`, each maximal subpart of an ill-formed sequence read as U+FFFD
/// (the "best practice" of section 3.9 that Hugging Face's decoders follow).
std::u32string code_points(std::string_view s) {
  std::u32string cps;
  for (size_t pos = 0; pos < s.size();) {
    const subpart p = read_sequence(s, pos);
    cps += p.complete ? p.cp : U'\uFFFD';
    pos += p.length;
  }
  return cps;
}

bool valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const subpart p = read_sequence(s, pos);
    if (!p.complete) return false;
    pos += p.length;
  }
  return true;
}

std::string lossy_utf8(std::string_view s) {
  std::string out;
  for (char32_t cp : code_points(s)) append_code_point(out, cp);
  return out;
}

TEST(tokenizer_fuzz, the_reference_reads_utf8_as_the_standard_says) {
  // Unicode 15, section 3.9, "U+FFFD Substitution of Maximal Subparts", table 3-8 and around.
  EXPECT_EQ(lossy_utf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
  EXPECT_EQ(lossy_utf8("\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41"),
            "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\x41");
  EXPECT_EQ(lossy_utf8("\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41"),
            "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\x41");
  EXPECT_EQ(lossy_utf8("\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42"),
            "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\x41\uFFFD\uFFFD\x42");
  EXPECT_EQ(lossy_utf8("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41"), "\uFFFD\uFFFD\uFFFD\uFFFD\x41");
  EXPECT_EQ(lossy_utf8("\xC3\xA9\xE5\xAD\x97\xF0\x9F\x98\x80"), "\u00E9\u5B57\U0001F600");
  EXPECT_TRUE(valid_utf8("\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(valid_utf8("\xF4\x90\x80\x80"));
}

// --- The tokenizers. ---

struct named_tokenizer {
  const char* name;
  tokenizer tok;
  bool nfc;  // normalizes to NFC, so only text NFC leaves alone round-trips
};

std::vector<named_tokenizer> load_all() {
  auto dir = testing::shared_dir() / "tokenizers";
  return {{"llama2", tokenizer::load(dir / "llama2"), false},
          {"llama3", tokenizer::load(dir / "llama3"), false},
          {"qwen3", tokenizer::load(dir / "qwen3"), true},
          {"stories260K", tokenizer::load(testing::stories260k_dir()), false}};
}

/// Ranges of code points NFC maps to themselves in any context: starters (combining class 0)
/// that no canonical mapping ever changes or composes with what precedes them. Left out:
/// combining marks (U+0300...: they compose and reorder), Greek (singletons such as U+037E),
/// U+2000 and U+2001 (they become U+2002 and U+2003), and the astral planes (compatibility
/// ideographs, musical symbols).
constexpr std::pair<char32_t, char32_t> nfc_stable_ranges[] = {
    {0x00, 0x2FF},    {0x400, 0x482},   {0x48A, 0x4FF},     {0x2002, 0x206F},
    {0x4E00, 0x4FFF}, {0xAC00, 0xACFF}, {0x1F300, 0x1F6FF}, {0xFFFD, 0xFFFD}};

bool nfc_stable(char32_t cp) {
  for (auto [lo, hi] : nfc_stable_ranges)
    if (cp >= lo && cp <= hi) return true;
  return false;
}

bool nfc_stable(std::string_view text) {
  for (char32_t cp : code_points(text))
    if (!nfc_stable(cp)) return false;
  return true;
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

/// Special tokens in `ids` other than the BOS that add_special_tokens may put first: text,
/// random or not, must never encode to one.
int num_special_from_text(const tokenizer& tok, const std::vector<int32_t>& ids, bool add_special) {
  int n = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    n += tok.is_special(ids[i]) && !(add_special && i == 0 && ids[i] == tok.bos_id());
  return n;
}

TEST(tokenizer_fuzz, random_bytes_decode_to_their_lossy_reading) {
  std::mt19937 rng(7);
  for (auto& [name, tok, nfc] : load_all()) {
    int compared = 0;
    for (int round = 0; round < 300; ++round) {
      std::string bytes(rng() % 64, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      const bool add_special = round % 2 == 0;
      auto ids = tok.encode(bytes, add_special);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && static_cast<size_t>(id) < tok.vocab_size());
      EXPECT_EQ(num_special_from_text(tok, ids, add_special), 0) << name << " round " << round;
      EXPECT_TRUE(valid_utf8(tok.decode(ids, false))) << name;
      // Invalid bytes became U+FFFD, so the text is the lossy reading of the input (which NFC
      // may change unless every character of it is NFC-stable).
      const std::string expected = lossy_utf8(bytes);
      if (nfc && !nfc_stable(expected)) continue;
      EXPECT_EQ(tok.decode(ids, true), expected) << name << " round " << round;
      ++compared;
    }
    // Every round without NFC; under NFC those whose characters it leaves alone (178 of 300).
    EXPECT_GE(compared, nfc ? 150 : 300) << name;
  }
}

TEST(tokenizer_fuzz, random_unicode_round_trips) {
  std::mt19937 rng(11);
  for (auto& [name, tok, nfc] : load_all()) {
    for (int round = 0; round < 400; ++round) {
      std::string text;
      size_t n = rng() % 48;
      for (size_t i = 0; i < n; ++i) {
        // Under NFC only characters it leaves alone; the NFC test below covers the others.
        char32_t cp = random_code_point(rng);
        while (nfc && !nfc_stable(cp)) cp = random_code_point(rng);
        append_code_point(text, cp);
      }
      auto ids = tok.encode(text, false);
      EXPECT_EQ(num_special_from_text(tok, ids, false), 0) << name << " round " << round;
      EXPECT_EQ(tok.decode(ids, false), text) << name << " round " << round;
    }
  }
}

TEST(tokenizer_fuzz, an_nfc_tokenizer_decodes_the_composed_text) {
  // NFC by hand (Unicode's canonical mappings): compositions, a singleton, canonical order.
  const tokenizer qwen = tokenizer::load(testing::shared_dir() / "tokenizers" / "qwen3");
  const std::pair<const char*, const char*> cases[] = {
      {"e\u0301t\u00e9", "\u00e9t\u00e9"},            // e + acute -> é
      {"A\u030Angstr\u00f6m", "\u00C5ngstr\u00f6m"},  // A + ring above -> Å
      {"\u212B", "\u00C5"},                           // ANGSTROM SIGN -> Å (a singleton)
      {"a\u2000b", "a\u2002b"},                       // EN QUAD -> EN SPACE (a singleton)
      {"\u1100\u1161", "\uAC00"},                     // Hangul L + V jamo -> 가
      {"q\u0307\u0323", "q\u0323\u0307"},             // dot below (220) before dot above (230)
  };
  for (const auto& [input, composed] : cases)
    EXPECT_EQ(qwen.decode(qwen.encode(input, false), false), composed) << input;
}

TEST(tokenizer_fuzz, random_ids_decode_to_valid_utf8) {
  std::mt19937 rng(3);
  for (auto& [name, tok, nfc] : load_all()) {
    std::uniform_int_distribution<int32_t> any(-5, static_cast<int32_t>(tok.vocab_size()) + 5);
    for (int round = 0; round < 200; ++round) {
      std::vector<int32_t> ids(rng() % 32);
      for (auto& id : ids) id = any(rng);
      EXPECT_TRUE(valid_utf8(tok.decode(ids, round % 2 == 0))) << name;
    }
  }
}

}  // namespace
}  // namespace actorllm
