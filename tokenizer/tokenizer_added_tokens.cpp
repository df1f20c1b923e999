#include "tokenizer/tokenizer_added_tokens.hpp"

#include <algorithm>

#include "text/unicode.hpp"

namespace actorllm {
namespace {

bool is_space(char32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_word_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c >= 0x80;
}

}  // namespace

added_token_matcher::added_token_matcher(std::vector<added_token> tokens)
    : tokens_(std::move(tokens)) {
  for (uint32_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].content.empty())
      by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

std::vector<text_segment> added_token_matcher::split(std::string_view text) const {
  std::vector<text_segment> out;
  size_t start_offset = 0;  // end of the previous match
  for (size_t pos = 0; pos < text.size(); ++pos) {
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[pos])];
    if (candidates.empty()) continue;
    const added_token* hit = nullptr;
    for (uint32_t i : candidates) {
      const auto& t = tokens_[i];
      if (text.compare(pos, t.content.size(), t.content) != 0) continue;
      size_t stop = pos + t.content.size();
      if (t.single_word && ((pos > 0 && is_word_byte(text[pos - 1])) ||
                            (stop < text.size() && is_word_byte(text[stop]))))
        continue;
      hit = &t;
      break;
    }
    if (!hit) continue;
    size_t begin = pos, stop = pos + hit->content.size();
    if (hit->lstrip) {
      // Walk back over whitespace characters, never into the previous match.
      size_t b = begin;
      while (b > start_offset) {
        size_t p = b - 1;
        while (p > start_offset && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        size_t q = p;
        if (!is_space(unicode::next_code_point(text, q))) break;
        b = p;
      }
      begin = b;
    }
    if (hit->rstrip) {
      while (stop < text.size()) {
        size_t q = stop;
        if (!is_space(unicode::next_code_point(text, q))) break;
        stop = q;
      }
    }
    if (begin > start_offset) out.push_back({start_offset, begin, -1});
    out.push_back({begin, stop, hit->id});
    start_offset = stop;
    pos = stop - 1;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
  return out;
}

}  // namespace actorllm
