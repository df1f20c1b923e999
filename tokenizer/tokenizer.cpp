#include "tokenizer/tokenizer.hpp"

#include "tokenizer/tokenizer_state.hpp"
#include "text/unicode.hpp"

namespace actorllm {

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const state& s = *state_;
  std::string sanitized;
  if (!unicode::is_valid_utf8(text)) {
    sanitized = unicode::to_valid_utf8(text);
    text = sanitized;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  if (add_special_tokens) ids.insert(ids.end(), s.prefix_ids.begin(), s.prefix_ids.end());
  std::vector<std::string> pieces;
  for (const text_segment& seg : s.added.split(text)) {
    if (seg.token_id >= 0) {
      ids.push_back(seg.token_id);
      continue;
    }
    pieces.clear();
    pieces.emplace_back(text.substr(seg.begin, seg.end - seg.begin));
    if (s.norm) s.norm->normalize(pieces.back());
    if (s.pre) s.pre->pre_tokenize(pieces, seg.begin == 0);
    for (const auto& p : pieces) s.model->tokenize(p, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), s.suffix_ids.begin(), s.suffix_ids.end());
  return ids;
}

std::string tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const state& s = *state_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (auto it = s.added_index.find(id); it != s.added_index.end()) {
      const added_token& t = s.added.tokens()[it->second];
      if (!(skip_special_tokens && t.special)) tokens.push_back(t.content);
      continue;
    }
    const std::string& piece = s.model->id_to_token(id);
    if (!piece.empty()) tokens.push_back(piece);
  }
  return decode_tokens(s.decoder.get(), std::move(tokens));
}

const std::string& tokenizer::id_to_piece(int32_t id) const {
  if (auto it = state_->added_index.find(id); it != state_->added_index.end())
    return state_->added.tokens()[it->second].content;
  return state_->model->id_to_token(id);
}

std::optional<int32_t> tokenizer::piece_to_id(std::string_view piece) const {
  for (const auto& t : state_->added.tokens())
    if (t.content == piece) return t.id;
  return state_->model->token_to_id(piece);
}

size_t tokenizer::vocab_size() const {
  return state_->vocab_size;
}

bool tokenizer::is_special(int32_t id) const {
  auto it = state_->added_index.find(id);
  return it != state_->added_index.end() && state_->added.tokens()[it->second].special;
}

int32_t tokenizer::bos_id() const {
  return state_->bos_id;
}
int32_t tokenizer::eos_id() const {
  return state_->eos_id;
}
const std::vector<int32_t>& tokenizer::eos_ids() const {
  return state_->eos_ids;
}
const std::string& tokenizer::bos_token() const {
  return state_->bos_token;
}
const std::string& tokenizer::eos_token() const {
  return state_->eos_token;
}
const std::string& tokenizer::chat_template() const {
  return state_->chat_template;
}

}  // namespace actorllm
