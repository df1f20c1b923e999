#pragma once
/// Streaming detokenization: ids arrive one at a time, text leaves in deltas.
///
/// It decodes a short window of recent ids twice (up to the last emitted id, and up to the
/// newest) and emits the difference, as vLLM does, so decoders that look at context
/// (SentencePiece's leading-space strip, byte fallback, byte-level BPE) give the same text as
/// decoding everything at once. A delta never ends inside a UTF-8 character: while the newest
/// text ends with U+FFFD the bytes are held back until the character completes, and a run
/// of SentencePiece byte-fallback pieces (<0xNN>) is held until it ends, because Hugging
/// Face decodes such a run as a whole (all U+FFFD if any byte of it is invalid).
///
/// Contract: push() deltas + finish() concatenated equal
///   tokenizer.decode(generated ids)                                  without prompt ids, or
///   decode(prompt + generated) minus its decode(prompt) prefix       with prompt ids.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace actorllm {

class incremental_detokenizer {
 public:
  /// `prompt_ids` give context only (the first generated word gets its leading space).
  incremental_detokenizer(tokenizer tok, bool skip_special_tokens,
                          std::span<const int32_t> prompt_ids = {});

  /// Adds one generated id; returns the text it completes (often empty while bytes wait).
  std::string push(int32_t id);

  /// Returns whatever is still held back (e.g. an invalid byte sequence at the very end).
  /// Call once when the sequence ends.
  std::string finish();

  /// Everything emitted so far.
  const std::string& text() const { return text_; }

 private:
  std::string emit(bool force);

  tokenizer tok_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // the window decoded for context starts here
  size_t read_offset_ = 0;    // ids before this one have been emitted
  std::string text_;
};

}  // namespace actorllm
