// A token that decodes to nothing (a special token under skip_special_tokens, an id outside
// the vocabulary) does not end a run of byte-fallback pieces when everything is decoded at
// once, so streaming must not emit the bytes before it early: the deltas still add up to
// decode(). Found by fuzz/tokenizer_encode_fuzz.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_data.hpp"
#include "tokenizer/incremental_detokenizer.hpp"

namespace actorllm {
namespace {

std::string streamed_text(const tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  incremental_detokenizer detok(tok, skip);
  std::string all;
  for (int32_t id : ids) all += detok.push(id);
  return all + detok.finish();
}

TEST(incremental_detokenizer_skipped, a_skipped_token_inside_a_byte_run_holds_the_run) {
  const tokenizer tok = tokenizer::load(testing::stories260k_dir());
  const int32_t percent = *tok.piece_to_id("<0x25>");  // "%", valid alone
  const int32_t lead = *tok.piece_to_id("<0xC3>");     // a lead byte that nothing completes
  const int32_t paren = *tok.piece_to_id(")");
  ASSERT_TRUE(tok.is_special(tok.bos_id()));
  const int32_t outside = static_cast<int32_t>(tok.vocab_size()) + 3;

  // "%" and 0xC3 form one invalid run: two U+FFFD, not "%" and one U+FFFD.
  const std::vector<std::vector<int32_t>> cases = {{percent, tok.bos_id(), lead, paren},
                                                   {percent, outside, lead, paren},
                                                   {percent, -1, lead},
                                                   {percent, tok.bos_id()}};
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(streamed_text(tok, cases[i], true), tok.decode(cases[i], true)) << "case " << i;
  }
  EXPECT_EQ(tok.decode(cases[0], true), "\xEF\xBF\xBD\xEF\xBF\xBD)");
  // Kept, the special token is text and ends the run.
  EXPECT_EQ(streamed_text(tok, cases[0], false), tok.decode(cases[0], false));
}

}  // namespace
}  // namespace actorllm
