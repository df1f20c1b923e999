#include "grammar/json_primitives.hpp"

#include <algorithm>
#include <map>

#include "grammar/escapes.hpp"
#include "grammar/regex_parser.hpp"

namespace actorllm::grammar {
namespace {

expr digit() {
  return byte_range('0', '9');
}
expr digits(int32_t min, int32_t max) {
  return repeat(digit(), min, max);
}
expr byte_of(char c) {
  return byte_range(uint8_t(c), uint8_t(c));
}

// The ranges of plain (unescaped) string characters.
std::vector<code_point_range> plain_chars() {
  return complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
}

expr hex_digit() {
  return alternation({byte_range('0', '9'), byte_range('a', 'f'), byte_range('A', 'F')});
}

// Equal-length decimal strings x <= y: every digit string of that length in [x, y].
expr same_length_range(const std::string& x, const std::string& y) {
  if (x.empty()) return empty();
  const size_t rest = x.size() - 1;
  if (x[0] == y[0]) return sequence({byte_of(x[0]), same_length_range(x.substr(1), y.substr(1))});
  const bool x_rest_min = x.find_first_not_of('0', 1) == std::string::npos;
  const bool y_rest_max = y.find_first_not_of('9', 1) == std::string::npos;
  std::vector<expr> parts;
  char lo = x[0], hi = y[0];
  if (!x_rest_min) {
    parts.push_back(
        sequence({byte_of(x[0]), same_length_range(x.substr(1), std::string(rest, '9'))}));
    ++lo;
  }
  const char mid_hi = y_rest_max ? hi : char(hi - 1);
  if (lo <= mid_hi)
    parts.push_back(
        sequence({byte_range(uint8_t(lo), uint8_t(mid_hi)), digits(int32_t(rest), int32_t(rest))}));
  if (!y_rest_max)
    parts.push_back(
        sequence({byte_of(y[0]), same_length_range(std::string(rest, '0'), y.substr(1))}));
  return alternation(std::move(parts));
}

// Non-negative integers in [lo, hi] (hi absent: unbounded), without leading zeros.
expr natural_range(uint64_t lo, std::optional<uint64_t> hi) {
  std::vector<expr> parts;
  const std::string a = std::to_string(lo);
  const size_t last_len = hi ? std::to_string(*hi).size() : a.size();
  for (size_t len = a.size(); len <= last_len; ++len) {
    std::string from = a;  // the first number of `len` digits, 10...0, after the first length
    if (len != a.size()) from.assign(len, '0').front() = '1';
    std::string to = hi && len == last_len ? std::to_string(*hi) : std::string(len, '9');
    parts.push_back(same_length_range(from, to));
  }
  if (!hi)  // every longer number
    parts.push_back(sequence({byte_range('1', '9'), digits(int32_t(a.size()), -1)}));
  return alternation(std::move(parts));
}

uint64_t magnitude(int64_t v) {
  return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
}

const char* const date_pattern =
    "(?:(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-"
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
    "02-(?:0[1-9]|1[0-9]|2[0-8]))"
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29)";
const char* const time_pattern =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?"
    "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";

}  // namespace

expr json_string_char() {
  expr nonsurrogate_hex4 = alternation({
      sequence({alternation({byte_range('0', '9'), byte_range('a', 'c'), byte_range('A', 'C'),
                             byte_range('e', 'f'), byte_range('E', 'F')}),
                hex_digit(), hex_digit(), hex_digit()}),
      sequence({alternation({byte_of('d'), byte_of('D')}), byte_range('0', '7'), hex_digit(),
                hex_digit()}),
  });
  expr escape = sequence({byte_of('\\'), alternation({
                                             byte_of('"'),
                                             byte_of('\\'),
                                             byte_of('/'),
                                             byte_of('b'),
                                             byte_of('f'),
                                             byte_of('n'),
                                             byte_of('r'),
                                             byte_of('t'),
                                             sequence({byte_of('u'), std::move(nonsurrogate_hex4)}),
                                         })});
  return alternation({code_points(plain_chars()), std::move(escape)});
}

expr json_number(bool nonnegative) {
  expr integer = alternation({byte_of('0'), sequence({byte_range('1', '9'), digits(0, -1)})});
  expr fraction = optional(sequence({byte_of('.'), digits(1, -1)}));
  expr exponent =
      optional(sequence({alternation({byte_of('e'), byte_of('E')}),
                         optional(alternation({byte_of('+'), byte_of('-')})), digits(1, -1)}));
  std::vector<expr> parts;
  if (!nonnegative) parts.push_back(optional(byte_of('-')));
  parts.push_back(std::move(integer));
  parts.push_back(std::move(fraction));
  parts.push_back(std::move(exponent));
  return sequence(std::move(parts));
}

expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return alternation({});
  std::vector<expr> parts;
  // Negative part: -[max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const uint64_t from = hi && *hi < 0 ? magnitude(*hi) : 1;
    std::optional<uint64_t> to;
    if (lo) to = magnitude(*lo);
    parts.push_back(sequence({byte_of('-'), natural_range(from, to)}));
  }
  // Non-negative part: [max(0, lo), hi].
  if (!hi || *hi >= 0) {
    const uint64_t from = lo && *lo > 0 ? uint64_t(*lo) : 0;
    std::optional<uint64_t> to;
    if (hi) to = uint64_t(*hi);
    parts.push_back(natural_range(from, to));
  }
  return alternation(std::move(parts));
}

std::optional<expr> string_format(std::string_view format) {
  std::string pattern;
  if (format == "date") {
    pattern = date_pattern;
  } else if (format == "time") {
    pattern = time_pattern;
  } else if (format == "date-time") {
    pattern = std::string(date_pattern) + "T" + time_pattern;
  } else if (format == "email") {
    pattern =
        "[a-zA-Z0-9_%+-]+(?:\\.[a-zA-Z0-9_%+-]+)*@"
        "(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)+[a-zA-Z]{2,24}";
  } else if (format == "uuid") {
    pattern = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  } else if (format == "ipv4") {
    const std::string octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])";
    pattern = octet + "\\." + octet + "\\." + octet + "\\." + octet;
  } else {
    return std::nullopt;
  }
  return parse_regex(pattern);
}

namespace {

// Keys by code points, as a trie: node → (next code point → child); `terminal` marks names.
struct key_trie {
  std::vector<std::map<char32_t, int32_t>> children = {{}};
  std::vector<bool> terminal = {false};
};

expr key_suffix(const key_trie& t, int32_t node) {
  std::vector<expr> parts;
  if (!t.terminal[node]) parts.push_back(byte_of('"'));
  std::vector<code_point_range> used;
  const auto plain = plain_chars();
  auto is_plain = [&](char32_t cp) {
    return std::any_of(plain.begin(), plain.end(),
                       [&](auto r) { return r.first <= cp && cp <= r.second; });
  };
  for (const auto& [cp, child] : t.children[node]) {
    if (!is_plain(cp)) continue;  // no plain key can follow this name
    used.push_back({cp, cp});
    std::string bytes;
    append_code_point(bytes, cp);
    parts.push_back(sequence({literal(bytes), key_suffix(t, child)}));
  }
  // Any other plain character leaves every name behind.
  std::vector<code_point_range> others;
  for (auto r : complement(used))
    for (auto p : plain) {
      char32_t lo = std::max(r.first, p.first), hi = std::min(r.second, p.second);
      if (lo <= hi) others.push_back({lo, hi});
    }
  parts.push_back(
      sequence({code_points(others), repeat(code_points(plain_chars()), 0, -1), byte_of('"')}));
  return alternation(std::move(parts));
}

}  // namespace

expr json_key_not_in(const std::vector<std::string>& names) {
  key_trie t;
  for (const std::string& name : names) {
    int32_t node = 0;
    for (size_t pos = 0; pos < name.size();) {
      char32_t cp;
      try {
        cp = next_utf8(name, pos);
      } catch (const escape_error&) {
        break;
      }
      auto [it, added] = t.children[node].try_emplace(cp, int32_t(t.children.size()));
      if (added) {
        t.children.emplace_back();
        t.terminal.push_back(false);
      }
      node = it->second;
    }
    t.terminal[node] = true;
  }
  return sequence({byte_of('"'), key_suffix(t, 0)});
}

}  // namespace actorllm::grammar
