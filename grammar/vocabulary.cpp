#include "grammar/vocabulary.hpp"

#include <algorithm>
#include <stdexcept>

#include "text/unicode.hpp"

namespace actorllm::grammar {
namespace {

// "<0xNN>" → NN, else -1.
int byte_piece(std::string_view piece) {
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                  : -1;
  };
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int hi = hex(piece[3]), lo = hex(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// A byte-level piece's bytes; the piece itself when a character is outside GPT-2's map (an
// added token's text), as the ByteLevel decoder does.
std::string byte_level_bytes(const std::string& piece) {
  std::string out;
  for (size_t pos = 0; pos < piece.size();) {
    int b = unicode::byte_level_decode(unicode::next_code_point(piece, pos));
    if (b < 0) return piece;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

std::string sentencepiece_bytes(const std::string& piece) {
  if (int b = byte_piece(piece); b >= 0) return std::string(1, static_cast<char>(b));
  static const std::string space = "\xE2\x96\x81";  // ▁
  std::string out;
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.compare(pos, space.size(), space) == 0) {
      out.push_back(' ');
      pos += space.size();
    } else {
      out.push_back(piece[pos++]);
    }
  }
  return out;
}

// Byte-level vocabularies spell a space as "Ġ" (U+0120) and decode it back to one.
bool is_byte_level(const tokenizer& tok) {
  auto id = tok.piece_to_id("\xC4\xA0");
  if (!id) return false;
  int32_t ids[] = {*id, *id};
  return tok.decode(ids, false) == "  ";
}

}  // namespace

std::shared_ptr<const vocabulary> vocabulary::from_tokenizer(const tokenizer& tok,
                                                             size_t mask_size) {
  const size_t n = tok.vocab_size();
  const bool byte_level = is_byte_level(tok);
  std::vector<std::string> bytes(n);
  std::vector<bool> special(n, false);
  for (size_t id = 0; id < n; ++id) {
    const int32_t i = static_cast<int32_t>(id);
    if (tok.is_special(i)) {
      special[id] = true;
      continue;
    }
    const std::string& piece = tok.id_to_piece(i);
    bytes[id] = byte_level ? byte_level_bytes(piece) : sentencepiece_bytes(piece);
  }
  // SentencePiece's <unk>, <s>, </s> are not always marked special; they are never text.
  for (int32_t id : {tok.bos_id(), tok.eos_id()})
    if (id >= 0 && size_t(id) < n) special[id] = true;
  if (auto unk = tok.piece_to_id("<unk>"); unk && !byte_level) special[*unk] = true;
  std::vector<int32_t> eos;
  for (int32_t id : tok.eos_ids())
    if (id >= 0) eos.push_back(id);
  return from_bytes(std::move(bytes), std::move(special), std::move(eos), mask_size);
}

std::shared_ptr<const vocabulary> vocabulary::from_bytes(std::vector<std::string> token_bytes,
                                                         std::vector<bool> special,
                                                         std::vector<int32_t> eos_ids,
                                                         size_t mask_size) {
  std::shared_ptr<vocabulary> v(new vocabulary());
  v->mask_size_ = std::max(mask_size, token_bytes.size());
  v->bytes_ = std::move(token_bytes);
  v->is_text_.assign(v->bytes_.size(), false);
  for (size_t id = 0; id < v->bytes_.size(); ++id)
    v->is_text_[id] = !v->bytes_[id].empty() && !(id < special.size() && special[id]);
  for (int32_t id : eos_ids) {
    if (id < 0 || size_t(id) >= v->mask_size_)
      throw std::invalid_argument("eos id " + std::to_string(id) + " outside the vocabulary");
    if (size_t(id) < v->is_text_.size()) v->is_text_[id] = false;
  }
  std::sort(eos_ids.begin(), eos_ids.end());
  eos_ids.erase(std::unique(eos_ids.begin(), eos_ids.end()), eos_ids.end());
  v->eos_ids_ = std::move(eos_ids);
  v->build_trie();
  return v;
}

std::string_view vocabulary::bytes(int32_t id) const {
  if (id < 0 || size_t(id) >= bytes_.size() || !is_text_[id]) return {};
  return bytes_[id];
}

void vocabulary::build_trie() {
  for (size_t id = 0; id < bytes_.size(); ++id)
    if (is_text_[id]) sorted_ids_.push_back(static_cast<int32_t>(id));
  std::sort(sorted_ids_.begin(), sorted_ids_.end(), [&](int32_t a, int32_t b) {
    return bytes_[a] != bytes_[b] ? bytes_[a] < bytes_[b] : a < b;
  });
  // path[d] = the node at depth d + 1 on the current token's path.
  std::vector<int32_t> path;
  std::string_view previous;
  for (size_t i = 0; i < sorted_ids_.size(); ++i) {
    const std::string_view b = bytes_[sorted_ids_[i]];
    max_token_bytes_ = std::max(max_token_bytes_, b.size());
    if (b.size() > 65535) throw std::invalid_argument("token longer than 65535 bytes");
    size_t common = 0;
    while (common < previous.size() && common < b.size() && previous[common] == b[common]) ++common;
    // Close the nodes of the previous path below the common prefix.
    while (path.size() > common) {
      trie_[path.back()].subtree_end = static_cast<int32_t>(trie_.size());
      path.pop_back();
    }
    for (size_t d = common; d < b.size(); ++d) {
      path.push_back(static_cast<int32_t>(trie_.size()));
      trie_.push_back({static_cast<uint8_t>(b[d]), static_cast<uint16_t>(d + 1), -1,
                       static_cast<int32_t>(i), static_cast<int32_t>(i)});
    }
    trie_node& last = trie_[path.back()];
    if (last.tokens_begin == last.tokens_end) last.tokens_begin = static_cast<int32_t>(i);
    last.tokens_end = static_cast<int32_t>(i + 1);
    previous = b;
  }
  while (!path.empty()) {
    trie_[path.back()].subtree_end = static_cast<int32_t>(trie_.size());
    path.pop_back();
  }
}

}  // namespace actorllm::grammar
