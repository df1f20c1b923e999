#pragma once
/// The BPE model of a tokenizer.json: vocabulary, merge ranks, byte fallback and a word cache.
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace actorllm {

class bpe_model {
 public:
  /// Builds the model from tokenizer.json's "model" object. Throws std::runtime_error when it
  /// is not of type BPE or a merge names a token missing from the vocabulary.
  explicit bpe_model(const nlohmann::json& spec);

  /// Appends the ids of one pre-tokenized word. Merges are applied lowest rank first (ties:
  /// leftmost) with a priority queue, exactly as Hugging Face's Word::merge_all.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// The vocabulary string of `id`; empty for ids outside the vocabulary.
  const std::string& id_to_token(int32_t id) const;
  /// One past the largest id of the vocabulary.
  size_t size() const { return id_to_token_.size(); }

  /// Reserves `id` for `token` (an added token beyond the model's vocabulary).
  void add_token(int32_t id, const std::string& token);

 private:
  struct merge {
    int32_t rank;
    int32_t new_id;
  };
  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void tokenize_piece(std::string_view word, std::vector<int32_t>& out) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;
  std::optional<int32_t> char_to_id(std::string_view ch) const;

  std::unordered_map<std::string, int32_t, string_hash, std::equal_to<>> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, merge> merges_;
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  int32_t byte_ids_[256];  // id of "<0xNN>" or -1
  // Ids of single characters below U+3000 (-1: not in the vocabulary), to skip hashing.
  std::vector<int32_t> char_ids_;
  // SentencePiece models see a whole text as one word. When no vocabulary token holds "▁"
  // after another character, no merge can cross the start of a "▁" run, so the word is cut
  // there: same result, and the pieces are short enough to cache.
  bool split_at_spaces_ = false;

  // Words repeat a lot in natural text; short ones are cached (bounded, cleared when full).
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, string_hash, std::equal_to<>>
      cache_;
};

}  // namespace actorllm
