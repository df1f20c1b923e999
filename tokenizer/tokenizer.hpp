#pragma once
/// A Hugging Face tokenizer.json of the BPE kind (SentencePiece-style like Llama-2, byte-level
/// like Llama-3 and Qwen), encoding and decoding exactly as the `tokenizers` library does:
/// added tokens first, then normalizer → pre-tokenizer → BPE, then the post-processor's
/// special tokens; decoding runs the decoder chain.
///
/// Copies are cheap and share the immutable state; encode/decode are thread-safe.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace actorllm {

class tokenizer {
 public:
  /// Loads `path`: a folder holding tokenizer.json, or the tokenizer.json file itself.
  /// tokenizer_config.json, generation_config.json and config.json beside it, when present,
  /// give the BOS/EOS tokens, add_bos_token / add_eos_token and the chat template.
  /// Throws std::runtime_error with a message naming the file and the problem.
  static tokenizer load(const std::filesystem::path& path);

  /// Token ids of `text`. Invalid UTF-8 is first replaced by U+FFFD (maximal subparts).
  /// `add_special_tokens` adds what the post-processor (or tokenizer_config.json's
  /// add_bos_token / add_eos_token) says, e.g. BOS for Llama-2, nothing for Qwen3.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;

  /// Text of `ids` (always valid UTF-8). Ids outside the vocabulary are skipped;
  /// `skip_special_tokens` also drops added tokens marked special.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  /// The vocabulary string of `id` (e.g. "▁Hello", "<0x0A>", "<|im_end|>"); empty if unknown.
  const std::string& id_to_piece(int32_t id) const;
  std::optional<int32_t> piece_to_id(std::string_view piece) const;

  /// One past the largest token id (model vocabulary plus added tokens).
  size_t vocab_size() const;
  /// True for added tokens marked "special" (skipped by skip_special_tokens).
  bool is_special(int32_t id) const;

  /// BOS / EOS ids, or -1 when the tokenizer has none. EOS comes from tokenizer_config.json,
  /// else generation_config.json, else config.json, else a conventional token name.
  int32_t bos_id() const;
  int32_t eos_id() const;
  /// Every id that ends generation: eos_id() plus generation_config.json's eos_token_id list.
  const std::vector<int32_t>& eos_ids() const;
  /// BOS / EOS token text for chat templates (empty when none).
  const std::string& bos_token() const;
  const std::string& eos_token() const;
  /// tokenizer_config.json's chat_template ("default" one when it holds several), or empty.
  const std::string& chat_template() const;

  struct state;

 private:
  explicit tokenizer(std::shared_ptr<const state> s) : state_(std::move(s)) {}
  std::shared_ptr<const state> state_;
};

}  // namespace actorllm
