// Each token's bytes as the model writes them, for the three kinds of tokenizer, and the
// vocabulary trie's shape.
#include "grammar/vocabulary.hpp"

#include <gtest/gtest.h>

#include "grammar/grammar.hpp"
#include "tests/grammar/grammar_tokenizers.hpp"

namespace actorllm::grammar {
namespace {

using testing::shared_tokenizer;
using testing::shared_vocabulary;

TEST(vocabulary, sentencepiece_spaces_and_byte_fallback) {
  auto v = shared_vocabulary("llama2");
  EXPECT_EQ(v->bytes(15043), " Hello");   // ▁Hello
  EXPECT_EQ(v->bytes(29871), " ");        // ▁
  EXPECT_EQ(v->bytes(13), "\n");          // <0x0A>
  EXPECT_EQ(v->bytes(35), " ");           // <0x20>
  EXPECT_EQ(v->bytes(0xE4 + 3), "\xE4");  // <0xE4>, half a character
  for (int32_t special : {0, 1, 2}) EXPECT_FALSE(v->is_text(special)) << special;
  EXPECT_EQ(v->eos_ids(), std::vector<int32_t>{2});
}

TEST(vocabulary, byte_level_pieces_map_back_to_bytes) {
  auto v = shared_vocabulary("llama3");
  EXPECT_EQ(v->bytes(22691), " Hello");  // ĠHello
  EXPECT_EQ(v->bytes(198), "\n");        // Ċ
  EXPECT_EQ(v->bytes(5018), "{\"");
  EXPECT_FALSE(v->is_text(128000));  // <|begin_of_text|>
  EXPECT_FALSE(v->is_text(128009));  // <|eot_id|>
  EXPECT_GE(v->mask_size(), 128256u);
}

TEST(vocabulary, added_tokens_that_are_not_special_are_their_text) {
  auto v = shared_vocabulary("qwen3");
  const auto& tok = shared_tokenizer("qwen3");
  int32_t think = *tok.piece_to_id("<think>");
  EXPECT_EQ(v->bytes(think), "<think>");
  EXPECT_FALSE(v->is_text(*tok.piece_to_id("<|im_end|>")));
}

TEST(vocabulary, every_text_token_decodes_to_its_bytes) {
  // For byte-level vocabularies decode() of one token is exactly its bytes whenever those
  // are valid UTF-8.
  for (const char* name : {"llama3", "qwen3"}) {
    const auto& tok = shared_tokenizer(name);
    auto v = shared_vocabulary(name);
    size_t checked = 0;
    for (int32_t id = 0; id < int32_t(tok.vocab_size()); id += 7) {
      if (!v->is_text(id)) continue;
      std::string text = tok.decode(std::vector<int32_t>{id}, false);
      if (text.find("\xEF\xBF\xBD") != std::string::npos) continue;
      ASSERT_EQ(text, v->bytes(id)) << name << " id " << id;
      ++checked;
    }
    EXPECT_GT(checked, 10000u);
  }
}

TEST(vocabulary, the_default_model_can_write_json_through_its_byte_tokens) {
  // stories260K has 512 tokens and no '{': only the byte fallback <0x7B> writes one.
  auto tok = tokenizer::load(actorllm::testing::stories260k_dir());
  auto v = vocabulary::from_tokenizer(tok);
  EXPECT_EQ(v->bytes(126), "{");
  EXPECT_EQ(v->bytes(265), " the");
  auto g = compile_json_schema(std::string_view(R"({"type": "object", "properties":
      {"name": {"type": "string"}}, "required": ["name"]})"),
                               {.strict = true}, v);
  matcher m(g);
  std::vector<uint32_t> mask(m.mask_words());
  m.fill_mask(mask);
  EXPECT_EQ(mask[126 / 32], uint32_t{1} << (126 % 32));  // only '{' in that word
  EXPECT_TRUE(m.accept_token(126));
}

TEST(vocabulary, trie_lists_every_text_token_once_in_byte_order) {
  auto v = vocabulary::from_bytes({"ab", "a", "b", "abc", "", "ab"}, {false, false, true}, {4});
  EXPECT_EQ(v->sorted_ids(), (std::vector<int32_t>{1, 0, 5, 3}));  // "b" is special
  const auto& trie = v->trie();
  ASSERT_EQ(trie.size(), 3u);  // a, ab, abc
  EXPECT_EQ(trie[0].byte, 'a');
  EXPECT_EQ(trie[0].subtree_end, 3);
  EXPECT_EQ(trie[1].depth, 2);
  EXPECT_EQ(trie[1].tokens_end - trie[1].tokens_begin, 2);  // "ab" twice
  EXPECT_EQ(trie[2].subtree_end, 3);
  EXPECT_FALSE(v->is_text(4));
  EXPECT_EQ(v->mask_words(), 1u);
}

}  // namespace
}  // namespace actorllm::grammar
