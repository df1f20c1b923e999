#include "grammar/grammar_ir.hpp"

#include <algorithm>

namespace actorllm::grammar {
namespace {

constexpr char32_t max_code_point = 0x10FFFF;
constexpr char32_t surrogate_lo = 0xD800, surrogate_hi = 0xDFFF;

int utf8_length(char32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

void encode_utf8(char32_t cp, uint8_t out[4]) {
  switch (utf8_length(cp)) {
    case 1:
      out[0] = static_cast<uint8_t>(cp);
      break;
    case 2:
      out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
}

// Splits [lo, hi] until every piece is a product of byte ranges (each byte position ranges
// independently), then adds that sequence of byte ranges: the utf8-ranges algorithm of
// Rust's regex-syntax.
void add_utf8_range(char32_t lo, char32_t hi, std::vector<expr>& out) {
  if (lo > hi) return;
  for (char32_t boundary : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= boundary && hi > boundary) {
      add_utf8_range(lo, boundary, out);
      add_utf8_range(boundary + 1, hi, out);
      return;
    }
  }
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        add_utf8_range(lo, lo | m, out);
        add_utf8_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        add_utf8_range(lo, (hi & ~m) - 1, out);
        add_utf8_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode_utf8(lo, a);
  encode_utf8(hi, b);
  std::vector<expr> bytes;
  for (int i = 0; i < n; ++i) bytes.push_back(byte_range(a[i], b[i]));
  out.push_back(n == 1 ? std::move(bytes[0]) : sequence(std::move(bytes)));
}

}  // namespace

expr empty() {
  return expr{};
}

expr byte_range(uint8_t lo, uint8_t hi) {
  expr e;
  e.k = expr::kind::byte_range;
  e.lo = lo;
  e.hi = hi;
  return e;
}

expr literal(std::string_view text) {
  std::vector<expr> bytes;
  for (char c : text) bytes.push_back(byte_range(uint8_t(c), uint8_t(c)));
  return sequence(std::move(bytes));
}

expr sequence(std::vector<expr> items) {
  if (items.empty()) return empty();
  if (items.size() == 1) return std::move(items[0]);
  expr e;
  e.k = expr::kind::sequence;
  e.items = std::move(items);
  return e;
}

expr alternation(std::vector<expr> items) {
  if (items.size() == 1) return std::move(items[0]);
  expr e;
  e.k = expr::kind::alternation;
  e.items = std::move(items);
  return e;
}

expr repeat(expr item, int32_t min, int32_t max) {
  expr e;
  e.k = expr::kind::repeat;
  e.min = min;
  e.max = max;
  e.items.push_back(std::move(item));
  return e;
}

expr optional(expr item) {
  return repeat(std::move(item), 0, 1);
}

expr char_count(expr item, int32_t min, int32_t max) {
  expr e = repeat(std::move(item), min, max);
  e.k = expr::kind::char_count;
  return e;
}

expr rule_ref(int32_t rule) {
  expr e;
  e.k = expr::kind::rule_ref;
  e.rule = rule;
  return e;
}

std::vector<code_point_range> normalize_ranges(std::vector<code_point_range> ranges) {
  std::vector<code_point_range> split;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, max_code_point);
    if (lo > hi) continue;
    if (lo < surrogate_lo && hi >= surrogate_lo) {
      split.push_back({lo, surrogate_lo - 1});
      lo = surrogate_lo;
    }
    if (lo >= surrogate_lo && lo <= surrogate_hi) lo = surrogate_hi + 1;
    if (lo <= hi) split.push_back({lo, hi});
  }
  std::sort(split.begin(), split.end());
  std::vector<code_point_range> merged;
  for (auto r : split) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

std::vector<code_point_range> complement(std::vector<code_point_range> ranges) {
  std::vector<code_point_range> out;
  char32_t next = 0;
  for (auto [lo, hi] : normalize_ranges(std::move(ranges))) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= max_code_point) out.push_back({next, max_code_point});
  return normalize_ranges(std::move(out));
}

expr code_points(std::vector<code_point_range> ranges) {
  std::vector<expr> alternatives;
  for (auto [lo, hi] : normalize_ranges(std::move(ranges))) add_utf8_range(lo, hi, alternatives);
  return alternation(std::move(alternatives));
}

int32_t grammar_ir::rule_index(const std::string& name) {
  auto [it, added] = index_.try_emplace(name, static_cast<int32_t>(rules.size()));
  if (added) rules.push_back(rule{name, alternation({})});
  return it->second;
}

int32_t grammar_ir::find_rule(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

}  // namespace actorllm::grammar
