// The tokenizer (tokenizer/tokenizer.hpp) of stories260K, loaded once, on arbitrary bytes:
// encode never crashes and gives ids inside the vocabulary; decode gives valid UTF-8, which is
// the lossy reading of the input when no special token came out and the input holds no "▁"
// (this tokenizer does not normalize); the same bytes read as ids decode to valid UTF-8, and
// streamed through the incremental detokenizer they give what decode gives at once (its contract).
// ACTORLLM_FUZZ_TOKENIZER=path loads another tokenizer.json or folder instead; then the round
// trip is not checked, since a tokenizer may normalize.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "text/unicode.hpp"
#include "tokenizer/incremental_detokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

using namespace actorllm;

struct loaded {
  tokenizer tok;
  bool check_round_trip;
};

const loaded& the_tokenizer() {
  static const loaded l = [] {
    if (const char* path = std::getenv("ACTORLLM_FUZZ_TOKENIZER"); path && *path) {
      return loaded{tokenizer::load(path), false};
    }
    return loaded{tokenizer::load(fuzz::shared_dir() / "models" / "stories260K"), true};
  }();
  return l;
}

bool has_special(const tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (tok.is_special(id)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const loaded& l = the_tokenizer();
  const tokenizer& tok = l.tok;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // Text -> ids -> text.
  const bool add_special = size > 0 && (data[0] & 1);
  const std::vector<int32_t> ids = tok.encode(bytes, add_special);
  for (int32_t id : ids) FUZZ_CHECK(id >= 0 && static_cast<size_t>(id) < tok.vocab_size());
  const std::string text = tok.decode(ids, false);
  FUZZ_CHECK(unicode::is_valid_utf8(text));
  // "▁" (U+2581) is SentencePiece's space: it decodes as a space, as in Hugging Face's.
  if (l.check_round_trip && !add_special && !has_special(tok, ids) &&
      bytes.find("\u2581") == std::string_view::npos) {
    FUZZ_CHECK(text == unicode::to_valid_utf8(bytes));
  }

  // Bytes as ids (a few beyond the vocabulary and negative ones included) -> text.
  std::vector<int32_t> raw_ids;
  const int64_t range = static_cast<int64_t>(tok.vocab_size()) + 8;
  for (size_t i = 0; i + 2 <= size && raw_ids.size() < 256; i += 2) {
    uint16_t v;
    std::memcpy(&v, data + i, 2);
    raw_ids.push_back(static_cast<int32_t>(v % range) - 4);
  }
  const bool skip_special = size > 1 && (data[1] & 1);
  const std::string whole = tok.decode(raw_ids, skip_special);
  FUZZ_CHECK(unicode::is_valid_utf8(whole));

  // The same ids one at a time: the deltas add up to the whole.
  incremental_detokenizer stream(tok, skip_special);
  std::string streamed;
  for (int32_t id : raw_ids) {
    const std::string delta = stream.push(id);
    FUZZ_CHECK(unicode::is_valid_utf8(delta));
    streamed += delta;
  }
  streamed += stream.finish();
  FUZZ_CHECK(streamed == whole);
  return 0;
}
