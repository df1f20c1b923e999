#pragma once
/// A tokenizer's vocabulary as the grammar sees it: each token's bytes, which tokens are
/// never text (special tokens), the end-of-sequence ids, and a trie over the text tokens.
///
/// Build once per tokenizer and share (immutable, thread-safe). The trie lists the text
/// tokens sorted by bytes as a preorder array of byte nodes: walking it visits each shared
/// prefix once, and a rejected prefix skips its whole subtree in one jump.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace actorllm::grammar {

class vocabulary {
 public:
  struct trie_node {
    uint8_t byte;          // the byte this node reads
    uint16_t depth;        // bytes from the root, this one included (1 for a first byte)
    int32_t subtree_end;   // index of the first node after this node's subtree
    int32_t tokens_begin;  // tokens whose bytes end here: sorted_ids()[tokens_begin, tokens_end)
    int32_t tokens_end;
  };

  /// Each id's bytes as the model writes them: byte-level BPE pieces through GPT-2's byte
  /// map, SentencePiece pieces with `▁` as a space and `<0xNN>` as the byte NN, added tokens
  /// as their text. Special tokens are never text. `mask_size` (the model's vocabulary, at
  /// least the tokenizer's; 0 = the tokenizer's) is the width of every mask.
  static std::shared_ptr<const vocabulary> from_tokenizer(const tokenizer& tok,
                                                          size_t mask_size = 0);
  /// For tests and other sources: bytes per id (empty: never text), and the ids that end a
  /// sequence (allowed only where the grammar may end).
  static std::shared_ptr<const vocabulary> from_bytes(std::vector<std::string> token_bytes,
                                                      std::vector<bool> special,
                                                      std::vector<int32_t> eos_ids,
                                                      size_t mask_size = 0);

  /// Ids in a mask, and the 32-bit words a mask takes (bit id % 32 of word id / 32).
  size_t mask_size() const { return mask_size_; }
  size_t mask_words() const { return (mask_size_ + 31) / 32; }
  /// The bytes of `id`; empty for special tokens and ids outside the tokenizer.
  std::string_view bytes(int32_t id) const;
  /// True when `id` is matched by its bytes (neither special nor empty).
  bool is_text(int32_t id) const { return id >= 0 && size_t(id) < is_text_.size() && is_text_[id]; }
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }

  const std::vector<trie_node>& trie() const { return trie_; }
  /// The text tokens sorted by bytes (ties by id).
  const std::vector<int32_t>& sorted_ids() const { return sorted_ids_; }
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  vocabulary() = default;
  void build_trie();

  size_t mask_size_ = 0;
  std::vector<std::string> bytes_;
  std::vector<bool> is_text_;
  std::vector<int32_t> eos_ids_;
  std::vector<int32_t> sorted_ids_;
  std::vector<trie_node> trie_;
  size_t max_token_bytes_ = 0;
};

}  // namespace actorllm::grammar
