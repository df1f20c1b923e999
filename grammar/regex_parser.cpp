#include "grammar/regex_parser.hpp"

#include <algorithm>
#include <string>

#include "grammar/escapes.hpp"
#include "grammar/grammar_error.hpp"

namespace actorllm::grammar {
namespace {

using ranges_t = std::vector<code_point_range>;

const ranges_t digit = {{'0', '9'}};
const ranges_t word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// Whitespace in both Python's str.isspace() and ECMAScript's \s.
const ranges_t space_both = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},
                             {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                             {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}};
// Whitespace in either of them: \S must exclude all of it.
const ranges_t space_either = {{'\t', '\r'},     {0x1C, ' '},      {0x85, 0x85},
                               {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                               {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                               {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const ranges_t line_terminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

ranges_t ascii_complement(const ranges_t& set) {
  ranges_t out;
  for (auto r : complement(set))
    if (r.first <= 0x7F) out.push_back({r.first, std::min<char32_t>(r.second, 0x7F)});
  return out;
}

void append(ranges_t& to, const ranges_t& from) {
  to.insert(to.end(), from.begin(), from.end());
}

class regex_parser {
 public:
  regex_parser(std::string_view pattern, regex_output output) : text_(pattern), output_(output) {}

  expr parse() {
    expr e = parse_alternation(0);
    if (pos_ < text_.size()) fail("unbalanced ')'");
    return e;
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& message) const {
    throw grammar_error("regex: at offset " + std::to_string(at) + ": " + message);
  }
  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  expr chars(ranges_t ranges) const {
    return output_ == regex_output::json_string ? json_string_char(std::move(ranges))
                                                : code_points(std::move(ranges));
  }

  expr parse_alternation(int depth) {
    std::vector<expr> alternatives;
    alternatives.push_back(parse_sequence(depth));
    while (peek() == '|') {
      ++pos_;
      alternatives.push_back(parse_sequence(depth));
    }
    return alternation(std::move(alternatives));
  }

  // Anchors are accepted only where they are implied: `^` first and `$` last in a top-level
  // alternative.
  expr parse_sequence(int depth) {
    std::vector<expr> items;
    const size_t start = pos_;
    for (;;) {
      if (at_end() || peek() == '|' || peek() == ')') break;
      const size_t at = pos_;
      if (peek() == '^' || (peek() == '\\' && peek(1) == 'A')) {
        pos_ += peek() == '^' ? 1 : 2;
        if (depth > 0 || at != start) fail_at(at, "anchors are supported only at the ends");
        continue;
      }
      if (peek() == '$' || (peek() == '\\' && (peek(1) == 'Z' || peek(1) == 'z'))) {
        pos_ += peek() == '$' ? 1 : 2;
        if (depth > 0 || !(at_end() || peek() == '|'))
          fail_at(at, "anchors are supported only at the ends");
        continue;
      }
      expr atom = parse_atom(depth);
      items.push_back(parse_quantifiers(std::move(atom)));
    }
    return sequence(std::move(items));
  }

  // At most one quantifier per atom (then an optional lazy '?'); "a**" is an error, as in
  // Python.
  expr parse_quantifiers(expr atom) {
    int32_t min = 0, max = 0;
    if (!try_quantifier(min, max)) return atom;
    if (peek() == '?')
      ++pos_;  // lazy: the same language
    else if (peek() == '+')
      fail("possessive quantifiers are not supported");
    int32_t again_min, again_max;
    const size_t at = pos_;
    if (try_quantifier(again_min, again_max)) fail_at(at, "multiple repeat");
    return repeat(std::move(atom), min, max);
  }

  bool try_quantifier(int32_t& min, int32_t& max) {
    switch (peek()) {
      case '*':
        ++pos_, min = 0, max = -1;
        return true;
      case '+':
        ++pos_, min = 1, max = -1;
        return true;
      case '?':
        ++pos_, min = 0, max = 1;
        return true;
      case '{':
        return try_braces(min, max);
      default:
        return false;
    }
  }

  // "{m}", "{m,}", "{m,n}"; anything else leaves pos unchanged and is a literal '{'.
  bool try_braces(int32_t& min, int32_t& max) {
    size_t p = pos_ + 1;
    auto number = [&](int64_t& value) {
      size_t start = p;
      value = 0;
      // Every digit is read (the count saturates past the limit), so that an overlong count
      // is an error below, not a literal '{'.
      while (p < text_.size() && text_[p] >= '0' && text_[p] <= '9')
        value = std::min<int64_t>(value * 10 + (text_[p++] - '0'), limit + 1);
      return p > start;
    };
    int64_t lo = 0, hi = 0;
    if (!number(lo)) return false;
    hi = lo;
    if (p < text_.size() && text_[p] == ',') {
      ++p;
      if (!number(hi)) hi = -1;
    }
    if (p >= text_.size() || text_[p] != '}') return false;
    if (lo > limit || hi > limit) fail("repetition count above " + std::to_string(limit));
    if (hi >= 0 && hi < lo) fail("repetition maximum below its minimum");
    pos_ = p + 1;
    min = static_cast<int32_t>(lo);
    max = static_cast<int32_t>(hi);
    return true;
  }

  expr parse_atom(int depth) {
    switch (peek()) {
      case '(':
        return parse_group(depth);
      case '[':
        return chars(parse_class());
      case '.':
        ++pos_;
        return chars(complement(line_terminators));
      case '*':
      case '+':
      case '?':
        fail("nothing to repeat");
      case '\\': {
        ranges_t set;
        if (parse_class_escape(set)) return chars(std::move(set));
        char32_t cp = parse_char_escape();
        return chars({{cp, cp}});
      }
      default:
        break;
    }
    char32_t cp = next_char();
    return chars({{cp, cp}});
  }

  expr parse_group(int depth) {
    const size_t at = pos_++;
    if (depth >= max_depth) fail_at(at, "groups nested deeper than " + std::to_string(max_depth));
    if (peek() == '?') {
      char k = peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if ((k == '<' && peek(2) != '=' && peek(2) != '!') || (k == 'P' && peek(2) == '<')) {
        size_t close = text_.find('>', pos_);
        if (close == std::string_view::npos) fail("unterminated group name");
        pos_ = close + 1;
      } else if (k == '=' || k == '!' || k == '<') {
        fail_at(at, "lookaround is not supported");
      } else {
        fail_at(at, "inline flags and other (?...) groups are not supported");
      }
    }
    expr inner = parse_alternation(depth + 1);
    if (peek() != ')') fail_at(at, "unbalanced '('");
    ++pos_;
    return inner;
  }

  // \d \w \s \D \W \S at pos; false (pos unchanged) for any other escape.
  bool parse_class_escape(ranges_t& set) {
    switch (peek(1)) {
      case 'd':
        append(set, digit);
        break;
      case 'w':
        append(set, word);
        break;
      case 's':
        append(set, space_both);
        break;
      case 'D':
        append(set, ascii_complement(digit));
        break;
      case 'W':
        append(set, ascii_complement(word));
        break;
      case 'S':
        append(set, complement(space_either));
        break;
      default:
        return false;
    }
    pos_ += 2;
    return true;
  }

  char32_t parse_char_escape() {
    const size_t at = pos_;
    char k = peek(1);
    if (k >= '1' && k <= '9') fail("backreferences are not supported");
    if (k == 'b' || k == 'B') fail("word boundaries are not supported");
    if (k == 'p' || k == 'P') fail("Unicode property escapes are not supported");
    if (k == 'k') fail("backreferences are not supported");
    char32_t cp = 0;
    try {
      if (k == 'u' && hex_value(peek(2)) >= 0) {
        cp = read_u_escape(at);
      } else {
        cp = parse_escape(text_, pos_);
      }
    } catch (const escape_error& e) {
      fail_at(e.position, e.what());
    }
    return cp;
  }

  // \uHHHH, joining a surrogate pair \uD83D\uDE00 into one code point.
  char32_t read_u_escape(size_t at) {
    auto hex4 = [&](size_t p) -> int64_t {
      int64_t v = 0;
      for (size_t i = 0; i < 4; ++i) {
        int h = p + i < text_.size() ? hex_value(text_[p + i]) : -1;
        if (h < 0) return -1;
        v = v * 16 + h;
      }
      return v;
    };
    int64_t hi = hex4(pos_ + 2);
    if (hi < 0) fail_at(at, "expected 4 hex digits in escape");
    pos_ += 6;
    if (hi < 0xD800 || hi > 0xDFFF) return static_cast<char32_t>(hi);
    int64_t lo = peek() == '\\' && peek(1) == 'u' ? hex4(pos_ + 2) : -1;
    if (hi > 0xDBFF || lo < 0xDC00 || lo > 0xDFFF) fail_at(at, "unpaired surrogate in escape");
    pos_ += 6;
    return static_cast<char32_t>(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
  }

  char32_t next_char() {
    try {
      return next_utf8(text_, pos_);
    } catch (const escape_error& e) {
      fail_at(e.position, e.what());
    }
  }

  ranges_t parse_class() {
    const size_t at = pos_++;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    ranges_t set;
    bool first = true;
    for (;; first = false) {
      if (at_end()) fail_at(at, "unterminated character class");
      if (peek() == ']' && !first) break;
      if (peek() == '[' && (peek(1) == ':' || peek(1) == '=' || peek(1) == '.'))
        fail("POSIX classes are not supported");
      if (peek() == '\\' && parse_class_escape(set)) continue;
      char32_t lo = class_char();
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (peek() == '\\' && (peek(1) == 'd' || peek(1) == 'w' || peek(1) == 's' ||
                               peek(1) == 'D' || peek(1) == 'W' || peek(1) == 'S'))
          fail("a class escape cannot end a range");
        char32_t hi = class_char();
        if (hi < lo) fail_at(at, "character range out of order");
        set.push_back({lo, hi});
      } else {
        set.push_back({lo, lo});
      }
    }
    ++pos_;
    return negated ? complement(std::move(set)) : set;
  }

  char32_t class_char() {
    if (peek() != '\\') return next_char();
    if (peek(1) == 'b') {  // backspace inside a class
      pos_ += 2;
      return 0x08;
    }
    return parse_char_escape();
  }

  static constexpr int64_t limit = 100000;
  static constexpr int max_depth = 200;  // bounds the recursion here and in the builder
  std::string_view text_;
  regex_output output_;
  size_t pos_ = 0;
};

}  // namespace

expr parse_regex(std::string_view pattern, regex_output output) {
  return regex_parser(pattern, output).parse();
}

expr json_string_char(std::vector<code_point_range> ranges) {
  ranges = normalize_ranges(std::move(ranges));
  std::vector<expr> alternatives;
  alternatives.push_back(code_points([&] {
    ranges_t plain;
    for (auto r : complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}})) {
      for (auto q : ranges) {
        char32_t lo = std::max(r.first, q.first), hi = std::min(r.second, q.second);
        if (lo <= hi) plain.push_back({lo, hi});
      }
    }
    return plain;
  }()));
  auto contains = [&](char32_t cp) {
    for (auto r : ranges)
      if (r.first <= cp && cp <= r.second) return true;
    return false;
  };
  if (contains('"')) alternatives.push_back(literal("\\\""));
  if (contains('\\')) alternatives.push_back(literal("\\\\"));
  const char* hex = "0123456789abcdef";
  for (char32_t cp = 0; cp < 0x20; ++cp) {
    if (!contains(cp)) continue;
    const char* short_form = cp == '\n'   ? "\\n"
                             : cp == '\r' ? "\\r"
                             : cp == '\t' ? "\\t"
                             : cp == 0x08 ? "\\b"
                             : cp == 0x0C ? "\\f"
                                          : nullptr;
    if (short_form) {
      alternatives.push_back(literal(short_form));
      continue;
    }
    const char low = hex[cp & 0xF];
    std::vector<expr> low_digit = {byte_range(uint8_t(low), uint8_t(low))};
    if (low >= 'a') low_digit.push_back(byte_range(uint8_t(low - 32), uint8_t(low - 32)));
    alternatives.push_back(sequence(
        {literal(std::string("\\u00") + hex[cp >> 4]), alternation(std::move(low_digit))}));
  }
  return alternation(std::move(alternatives));
}

}  // namespace actorllm::grammar
