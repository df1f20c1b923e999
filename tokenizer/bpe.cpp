#include "tokenizer/bpe.hpp"

#include <cstdio>
#include <queue>
#include <stdexcept>

#include "text/unicode.hpp"

namespace actorllm {
namespace {

/// The largest vocabulary id read from a file: 16M, far past any model's vocabulary, so that a
/// hostile id cannot size the id table (one string per id up to the largest) past memory.
constexpr int64_t max_token_id = (int64_t(1) << 24) - 1;

constexpr size_t max_cached_word_bytes = 64;
constexpr size_t max_cache_entries = 1 << 17;

const std::string empty_token;
const std::string space_marker = "\xE2\x96\x81";  // "▁"

std::pair<std::string, std::string> parse_merge(const nlohmann::json& m) {
  if (m.is_array() && m.size() == 2) return {m[0].get<std::string>(), m[1].get<std::string>()};
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    auto space = s.find(' ');
    if (space != std::string::npos && s.find(' ', space + 1) == std::string::npos)
      return {s.substr(0, space), s.substr(space + 1)};
  }
  throw std::runtime_error("malformed BPE merge in tokenizer.json: " + m.dump());
}

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  if ((lead >> 3) == 0x1E) return 4;
  return 1;
}

}  // namespace

bpe_model::bpe_model(const nlohmann::json& spec) {
  if (spec.value("type", "BPE") != "BPE")
    throw std::runtime_error("unsupported tokenizer model type '" + spec.value("type", "") +
                             "' (only BPE is implemented)");
  if (spec.contains("dropout") && !spec["dropout"].is_null() && spec["dropout"].get<double>() > 0)
    throw std::runtime_error("BPE dropout is not supported");
  for (const auto& [token, id] : spec.at("vocab").items()) {
    // A hostile file's id: a float (whose cast to int is undefined past its range) or a
    // number that would size the id table past any vocabulary is an error naming the token.
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > max_token_id)
      throw std::runtime_error("vocab id of '" + token + "' is not a whole number in [0, " +
                               std::to_string(max_token_id) + "]");
    add_token(static_cast<int32_t>(id.get<int64_t>()), token);
  }
  auto text_or_empty = [&](const char* key) {
    return spec.contains(key) && spec[key].is_string() ? spec[key].get<std::string>() : "";
  };
  continuing_subword_prefix_ = text_or_empty("continuing_subword_prefix");
  end_of_word_suffix_ = text_or_empty("end_of_word_suffix");
  byte_fallback_ = spec.value("byte_fallback", false);
  fuse_unk_ = spec.value("fuse_unk", false);
  ignore_merges_ = spec.value("ignore_merges", false);
  if (auto unk = text_or_empty("unk_token"); !unk.empty()) unk_id_ = token_to_id(unk);

  const auto& merges = spec.at("merges");
  merges_.reserve(merges.size());
  int32_t rank = 0;
  for (const auto& m : merges) {
    auto [a, b] = parse_merge(m);
    auto ia = token_to_id(a), ib = token_to_id(b);
    std::string joined = a + b.substr(std::min(continuing_subword_prefix_.size(), b.size()));
    auto ij = token_to_id(joined);
    if (!ia || !ib || !ij)
      throw std::runtime_error("BPE merge '" + a + " " + b + "' names a token not in the vocab");
    merges_.try_emplace(pair_key(*ia, *ib), merge{rank++, *ij});
  }
  char_ids_.assign(0x3000, -1);
  for (char32_t cp = 0; cp < char_ids_.size(); ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string ch;
    unicode::append_utf8(ch, cp);
    if (auto id = token_to_id(ch)) char_ids_[cp] = *id;
  }
  split_at_spaces_ = token_to_id(space_marker).has_value() && continuing_subword_prefix_.empty() &&
                     end_of_word_suffix_.empty();
  for (const auto& [token, id] : vocab_) {
    size_t lead = 0;
    while (token.compare(lead, space_marker.size(), space_marker) == 0) lead += space_marker.size();
    if (token.find(space_marker, lead) != std::string::npos) split_at_spaces_ = false;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto id = token_to_id(name);
    byte_ids_[b] = id ? *id : -1;
  }
}

void bpe_model::add_token(int32_t id, const std::string& token) {
  if (id < 0) throw std::runtime_error("negative token id for '" + token + "'");
  vocab_.try_emplace(token, id);
  if (static_cast<size_t>(id) >= id_to_token_.size()) id_to_token_.resize(id + 1);
  id_to_token_[id] = token;
}

std::optional<int32_t> bpe_model::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string& bpe_model::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return empty_token;
  return id_to_token_[id];
}

std::optional<int32_t> bpe_model::char_to_id(std::string_view ch) const {
  auto lead = static_cast<unsigned char>(ch[0]);
  if (ch.size() <= 3 && (lead < 0x80 || ch.size() > 1)) {
    size_t pos = 0;
    char32_t cp = unicode::next_code_point(ch, pos);
    if (pos == ch.size() && cp < char_ids_.size()) {
      int32_t id = char_ids_[cp];
      return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
    }
  }
  return token_to_id(ch);
}

void bpe_model::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (!split_at_spaces_) {
    tokenize_piece(word, out);
    return;
  }
  // Cut before every "▁" run that follows another character.
  size_t start = 0;
  for (size_t pos = 1; pos < word.size(); ++pos) {
    if (word.compare(pos, space_marker.size(), space_marker) != 0) continue;
    if (pos >= space_marker.size() &&
        word.compare(pos - space_marker.size(), space_marker.size(), space_marker) == 0)
      continue;
    tokenize_piece(word.substr(start, pos - start), out);
    start = pos;
    pos += space_marker.size() - 1;
  }
  tokenize_piece(word.substr(start), out);
}

void bpe_model::tokenize_piece(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  bool cacheable = word.size() <= max_cached_word_bytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= max_cache_entries) cache_.clear();
    cache_.try_emplace(std::string(word), out.begin() + start, out.end());
  }
}

void bpe_model::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<symbol> symbols;
  symbols.reserve(word.size());
  auto push = [&](int32_t id) {
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  };

  // Split into characters; unknown ones become byte tokens or (fused) unk, as in
  // tokenizers' BPE::merge_word.
  constexpr int32_t no_unk = -1;
  int32_t pending_unk = no_unk;  // an unk not yet pushed (fused with the next when fuse_unk_)
  std::string scratch;
  for (size_t pos = 0; pos < word.size();) {
    size_t len = std::min(utf8_length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    std::string_view ch = word.substr(pos, len);
    bool first = pos == 0, last = pos + len == word.size();
    std::optional<int32_t> id;
    if ((first || continuing_subword_prefix_.empty()) && (!last || end_of_word_suffix_.empty())) {
      id = char_to_id(ch);
    } else {
      scratch.assign(first ? "" : continuing_subword_prefix_).append(ch);
      if (last) scratch.append(end_of_word_suffix_);
      id = token_to_id(scratch);
    }
    pos += len;
    if (id) {
      if (pending_unk != no_unk) push(pending_unk), pending_unk = no_unk;
      push(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char c : ch) all = all && byte_ids_[c] >= 0;
      if (all) {
        for (unsigned char c : ch) push(byte_ids_[c]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk != no_unk && !fuse_unk_) push(pending_unk);
      pending_unk = *unk_id_;
    }
  }
  if (pending_unk != no_unk) push(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<candidate, std::vector<candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);

  while (!queue.empty()) {
    candidate top = queue.top();
    queue.pop();
    symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    symbol& right = symbols[left.next];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale entry
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }
  for (const auto& s : symbols)
    if (s.alive) out.push_back(s.id);
}

}  // namespace actorllm
