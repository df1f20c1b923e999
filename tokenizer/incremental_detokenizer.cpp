#include "tokenizer/incremental_detokenizer.hpp"

#include <algorithm>

namespace actorllm {
namespace {

// Ids of context kept before the first emitted one, as in vLLM.
constexpr size_t initial_context = 5;
// An incomplete UTF-8 character spans at most 3 bytes, so at most 3 ids; past this many
// pending ids a trailing U+FFFD is final and is emitted.
constexpr size_t max_pending_ids = 6;

// SentencePiece byte-fallback pieces: a run of them decodes all or nothing (one U+FFFD per
// byte when the run is not valid UTF-8), so text waits until the run is closed.
bool is_byte_piece(const std::string& piece) {
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>';
}

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

incremental_detokenizer::incremental_detokenizer(tokenizer tok, bool skip_special_tokens,
                                                 std::span<const int32_t> prompt_ids)
    : tok_(std::move(tok)),
      skip_special_tokens_(skip_special_tokens),
      ids_(prompt_ids.begin(), prompt_ids.end()) {
  read_offset_ = ids_.size();
  prefix_offset_ = ids_.size() > initial_context ? ids_.size() - initial_context : 0;
}

std::string incremental_detokenizer::push(int32_t id) {
  ids_.push_back(id);
  // A token that decodes to nothing (skipped as special, or outside the vocabulary) does not
  // close a run of byte pieces either: decode() joins the bytes on both sides of it.
  const std::string& piece = tok_.id_to_piece(id);
  if (is_byte_piece(piece) || piece.empty() || (skip_special_tokens_ && tok_.is_special(id)))
    return {};
  return emit(ids_.size() - read_offset_ > max_pending_ids);
}

std::string incremental_detokenizer::finish() {
  return emit(true);
}

std::string incremental_detokenizer::emit(bool force) {
  std::span<const int32_t> all(ids_);
  std::string before =
      tok_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_tokens_);
  std::string after = tok_.decode(all.subspan(prefix_offset_), skip_special_tokens_);
  if (after.size() <= before.size() || (!force && ends_with_replacement(after))) return {};
  // The earlier window is a prefix of the longer one except where a decoder's output depends
  // on what follows; then emit from the first difference on (never re-emit or drop text).
  size_t common = std::mismatch(before.begin(), before.end(), after.begin()).first - before.begin();
  std::string delta = after.substr(common);
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  text_ += delta;
  return delta;
}

}  // namespace actorllm
