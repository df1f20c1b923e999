#include "grammar/gbnf_parser.hpp"

#include <string>
#include <unordered_map>

#include "grammar/escapes.hpp"
#include "grammar/grammar_error.hpp"

namespace actorllm::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class gbnf_parser {
 public:
  explicit gbnf_parser(std::string_view text) : text_(text) {}

  grammar_ir parse() {
    skip_space();
    while (pos_ < text_.size()) {
      const size_t at = pos_;
      std::string name = parse_name();
      skip_space();
      if (!consume("::=")) fail("expected '::=' after rule name '" + name + "'");
      int32_t index = ir_.rule_index(name);
      if (defined_.count(index)) fail_at(at, "rule '" + name + "' is defined twice");
      defined_[index] = at;
      expr body = parse_alternation(false);
      ir_.rules[index].body = std::move(body);
      skip_space();
    }
    for (const auto& [index, at] : referenced_)
      if (!defined_.count(index)) fail_at(at, "undefined rule '" + ir_.rules[index].name + "'");
    ir_.root = ir_.find_rule("root");
    if (ir_.root < 0) fail_at(text_.size(), "no rule named 'root'");
    return std::move(ir_);
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& message) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw grammar_error("gbnf: line " + std::to_string(line) + ", column " +
                        std::to_string(column) + ": " + message);
  }
  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end()) {
      char c = text_[pos_];
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }

  bool consume(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  std::string parse_name() {
    size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  // True when a new rule `name ::=` starts at the current position.
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  expr parse_alternation(bool nested) {
    std::vector<expr> alternatives;
    alternatives.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      alternatives.push_back(parse_sequence(nested));
    }
    return alternation(std::move(alternatives));
  }

  expr parse_sequence(bool nested) {
    std::vector<expr> items;
    for (;;) {
      skip_space();
      if (at_end() || peek() == '|' || (nested && peek() == ')')) break;
      if (!nested && at_rule_start()) break;
      expr item = parse_primary();
      skip_space();
      item = parse_postfix(std::move(item));
      items.push_back(std::move(item));
    }
    return sequence(std::move(items));
  }

  expr parse_postfix(expr item) {
    for (int applied = 0;; ++applied) {
      if (applied > 4) fail("more than four repetition operators on one item");
      char c = peek();
      if (c == '*') {
        ++pos_;
        item = repeat(std::move(item), 0, -1);
      } else if (c == '+') {
        ++pos_;
        item = repeat(std::move(item), 1, -1);
      } else if (c == '?') {
        ++pos_;
        item = repeat(std::move(item), 0, 1);
      } else if (c == '{') {
        auto [min, max] = parse_braces();
        item = repeat(std::move(item), min, max);
      } else {
        return item;
      }
      skip_space();
    }
  }

  // "{m}", "{m,}", "{m,n}" or "{,n}"; returns (min, max) with max -1 for unbounded.
  std::pair<int32_t, int32_t> parse_braces() {
    const size_t at = pos_++;
    auto number = [&]() -> int64_t {
      skip_space();
      size_t start = pos_;
      int64_t value = 0;
      while (!at_end() && peek() >= '0' && peek() <= '9') {
        value = value * 10 + (peek() - '0');
        if (value > repeat_limit) fail("repetition count above " + std::to_string(repeat_limit));
        ++pos_;
      }
      skip_space();
      return pos_ == start ? -1 : value;
    };
    int64_t min = number(), max = min;
    if (peek() == ',') {
      ++pos_;
      max = number();
      if (min < 0) min = 0;
    } else if (min < 0) {
      fail_at(at, "expected a number in '{...}'");
    }
    if (peek() != '}') fail("expected '}'");
    ++pos_;
    if (max >= 0 && max < min) fail_at(at, "repetition maximum below its minimum");
    return {static_cast<int32_t>(min), static_cast<int32_t>(max)};
  }

  expr parse_primary() {
    const size_t at = pos_;
    char c = peek();
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '.') {
      ++pos_;
      return code_points({{0, 0x10FFFF}});
    }
    if (c == '(') {
      if (++depth_ > max_depth)
        fail("groups and repetitions nested deeper than " + std::to_string(max_depth));
      ++pos_;
      expr inner = parse_alternation(true);
      skip_space();
      if (peek() != ')') fail("expected ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (c == '<') fail("token references ('<...>') are not supported");
    if (is_name_char(c)) {
      std::string name = parse_name();
      int32_t index = ir_.rule_index(name);
      referenced_.try_emplace(index, at);
      return rule_ref(index);
    }
    fail(std::string("unexpected character '") + c + "'");
  }

  char32_t parse_char() {
    if (at_end()) fail("unexpected end of grammar");
    if (text_[pos_] == '\\') {
      try {
        return parse_escape(text_, pos_);
      } catch (const escape_error& e) {
        fail_at(e.position, e.what());
      }
    }
    try {
      return next_utf8(text_, pos_);
    } catch (const escape_error& e) {
      fail_at(e.position, e.what());
    }
  }

  expr parse_literal() {
    const size_t at = pos_++;  // the opening quote
    std::string bytes;
    for (;;) {
      if (at_end()) fail_at(at, "unterminated string literal");
      if (peek() == '"') break;
      if (peek() == '\n') fail("newline in string literal");
      append_code_point(bytes, parse_char());
    }
    ++pos_;
    return literal(bytes);
  }

  expr parse_class() {
    const size_t at = pos_++;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<code_point_range> ranges;
    for (;;) {
      if (at_end()) fail_at(at, "unterminated character class");
      if (peek() == ']') break;
      char32_t lo = parse_char(), hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail_at(at, "character range out of order");
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    return code_points(negated ? complement(std::move(ranges)) : std::move(ranges));
  }

  static constexpr int64_t repeat_limit = 100000;
  static constexpr int max_depth = 200;  // bounds the recursion here and in the builder
  int depth_ = 0;
  std::string_view text_;
  size_t pos_ = 0;
  grammar_ir ir_;
  std::unordered_map<int32_t, size_t> defined_;     // rule → where it is defined
  std::unordered_map<int32_t, size_t> referenced_;  // rule → where it is first used
};

}  // namespace

grammar_ir parse_gbnf(std::string_view text) {
  return gbnf_parser(text).parse();
}

}  // namespace actorllm::grammar
