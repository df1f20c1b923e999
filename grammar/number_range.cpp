#include "grammar/number_range.hpp"

#include <algorithm>
#include <cstdint>

namespace actorllm::grammar {
namespace {

expr digits(char lo, char hi) {
  return byte_range(uint8_t(lo), uint8_t(hi));
}
expr any_digits(int32_t min, int32_t max) {
  return repeat(digits('0', '9'), min, max);
}
// "(.[0-9]+)?": any fraction.
expr any_fraction() {
  return optional(sequence({literal("."), any_digits(1, -1)}));
}

// The non-negative numbers whose integer part has `len` digits, read digit by digit against
// the bounds aligned at the point (the lower bound padded with leading zeros to `len` digits,
// both bounds read as zeros past their last digit). A state is (digits written, still equal
// to the lower bound so far, still equal to the upper bound so far); a state equal to neither
// is free. Each digit position holds at most one state equal to each bound, so the expression
// grows linearly with the bounds' digits.
class aligned_range {
 public:
  // `hi` null: the upper bound has more integer digits than `len` (it cuts nothing here).
  aligned_range(size_t len, const decimal& lo, bool lo_inclusive, const decimal* hi,
                bool hi_inclusive)
      : len_(len), lo_inclusive_(lo_inclusive), hi_inclusive_(hi_inclusive) {
    lo_ = std::string(len - lo.int_digits.size(), '0') + lo.int_digits + lo.frac_digits;
    if (hi) hi_ = hi->int_digits + hi->frac_digits;
    has_hi_ = hi != nullptr;
  }

  std::optional<expr> build() { return digit(0, true, has_hi_); }

 private:
  static char at(const std::string& s, size_t p) { return p < s.size() ? s[p] : '0'; }
  static bool zeros_from(const std::string& s, size_t p) {
    return p >= s.size() || s.find_first_not_of('0', p) == std::string::npos;
  }

  // After `p` digits (p >= len_): the number may end here when it is then within the bounds.
  bool can_end(size_t p, bool on_lo, bool on_hi) const {
    return (!on_lo || (lo_inclusive_ && zeros_from(lo_, p))) &&
           (!on_hi || hi_inclusive_ || !zeros_from(hi_, p));
  }

  // What may follow the first `p` digits.
  std::optional<expr> after(size_t p, bool on_lo, bool on_hi) {
    if (p < len_) return digit(p, on_lo, on_hi);
    if (p > len_ && p >= lo_.size() && p >= hi_.size()) return past_bounds(on_lo, on_hi);
    std::vector<expr> parts;
    if (can_end(p, on_lo, on_hi)) parts.push_back(empty());
    if (auto d = digit(p, on_lo, on_hi))
      parts.push_back(p == len_ ? sequence({literal("."), std::move(*d)}) : std::move(*d));
    if (parts.empty()) return std::nullopt;
    return alternation(std::move(parts));
  }

  // Fraction digits past the last digit of both bounds: a bound still equalled stays equalled
  // by zeros; a larger digit leaves the lower one behind and the upper one broken.
  std::optional<expr> past_bounds(bool on_lo, bool on_hi) const {
    if (!on_lo && !on_hi) return any_digits(0, -1);
    if (on_hi) {  // the number equals the upper bound (and the lower one, if on_lo) so far
      if (!hi_inclusive_ || (on_lo && !lo_inclusive_)) return std::nullopt;
      return repeat(literal("0"), 0, -1);
    }
    expr above = sequence({digits('1', '9'), any_digits(0, -1)});
    return sequence({repeat(literal("0"), 0, -1),
                     lo_inclusive_ ? optional(std::move(above)) : std::move(above)});
  }

  // One digit at position `p`, then what may follow it.
  std::optional<expr> digit(size_t p, bool on_lo, bool on_hi) {
    const bool leading = p == 0 && len_ > 1;  // no leading zeros
    if (!on_lo && !on_hi) {
      if (p >= len_) return any_digits(1, -1);
      const int32_t rest = int32_t(len_ - p);
      expr integer = leading ? sequence({digits('1', '9'), any_digits(rest - 1, rest - 1)})
                             : any_digits(rest, rest);
      return sequence({std::move(integer), any_fraction()});
    }
    char lo = on_lo ? at(lo_, p) : '0', hi = on_hi ? at(hi_, p) : '9';
    if (leading) lo = std::max(lo, '1');
    std::vector<expr> parts;
    // Digits from `lo` to `hi` in runs that leave the same bounds equalled.
    for (char d = lo; d <= hi;) {
      const bool next_lo = on_lo && d == at(lo_, p), next_hi = on_hi && d == at(hi_, p);
      char last = d;
      while (last < hi && (on_lo && last + 1 == at(lo_, p)) == next_lo &&
             (on_hi && last + 1 == at(hi_, p)) == next_hi)
        ++last;
      if (auto rest = after(p + 1, next_lo, next_hi))
        parts.push_back(sequence({digits(d, last), std::move(*rest)}));
      d = char(last + 1);
    }
    if (parts.empty()) return std::nullopt;
    return alternation(std::move(parts));
  }

  size_t len_;
  std::string lo_, hi_;  // aligned digits: integer part then fraction
  bool lo_inclusive_, hi_inclusive_, has_hi_ = false;
};

// Non-negative numbers m with lo <= m (lo < m) and m <= hi (m < hi); hi null: unbounded.
std::optional<expr> magnitude_range(const decimal& lo, bool lo_inclusive, const decimal* hi,
                                    bool hi_inclusive) {
  if (hi) {
    const int c = compare(lo, *hi);
    if (c > 0 || (c == 0 && !(lo_inclusive && hi_inclusive))) return std::nullopt;
  }
  const size_t first = lo.int_digits.size();
  const size_t last = hi ? hi->int_digits.size() : SIZE_MAX;
  std::vector<expr> parts;
  const bool hi_here = hi && last == first;
  if (auto e = aligned_range(first, lo, lo_inclusive, hi_here ? hi : nullptr, hi_inclusive).build())
    parts.push_back(std::move(*e));
  // Integer parts longer than the lower bound's and shorter than the upper bound's: free.
  if (!hi || last >= first + 2) {
    const int32_t more = hi ? int32_t(last - 2) : -1;
    parts.push_back(sequence({digits('1', '9'), any_digits(int32_t(first), more), any_fraction()}));
  }
  if (hi && last > first)
    if (auto e = aligned_range(last, lo, lo_inclusive, hi, hi_inclusive).build())
      parts.push_back(std::move(*e));
  if (parts.empty()) return std::nullopt;
  return alternation(std::move(parts));
}

decimal magnitude(decimal d) {
  d.negative = false;
  return d;
}

}  // namespace

std::optional<decimal> parse_decimal(std::string_view text, size_t max_digits) {
  size_t i = 0;
  decimal d;
  if (i < text.size() && text[i] == '-') d.negative = true, ++i;
  auto run = [&] {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return std::string(text.substr(start, i - start));
  };
  const std::string integer = run();
  if (integer.empty()) return std::nullopt;
  std::string fraction;
  if (i < text.size() && text[i] == '.') {
    ++i;
    fraction = run();
    if (fraction.empty()) return std::nullopt;
  }
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool minus = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) minus = text[i++] == '-';
    const std::string e = run();
    if (e.empty() || e.size() > 9) return std::nullopt;
    exponent = minus ? -std::stoll(e) : std::stoll(e);
  }
  if (i != text.size()) return std::nullopt;
  std::string all = integer + fraction;
  const size_t lead = std::min(all.find_first_not_of('0'), all.size());
  // value = 0.all[lead..] * 10^point
  const int64_t point = int64_t(integer.size()) + exponent - int64_t(lead);
  all.erase(0, lead);
  all.erase(std::min(all.find_last_not_of('0') + 1, all.size()));
  if (all.empty()) return decimal{};  // zero, "-0" included
  if (point > int64_t(max_digits) || -point > int64_t(max_digits) || all.size() > max_digits)
    return std::nullopt;
  if (point <= 0) {
    d.int_digits = "0";
    d.frac_digits = std::string(size_t(-point), '0') + all;
  } else if (size_t(point) >= all.size()) {
    d.int_digits = all + std::string(size_t(point) - all.size(), '0');
  } else {
    d.int_digits = all.substr(0, size_t(point));
    d.frac_digits = all.substr(size_t(point));
  }
  return d;
}

int compare(const decimal& a, const decimal& b) {
  const bool a_neg = a.negative && !a.is_zero(), b_neg = b.negative && !b.is_zero();
  if (a_neg != b_neg) return a_neg ? -1 : 1;
  int c = 0;
  if (a.int_digits.size() != b.int_digits.size()) {
    c = a.int_digits.size() < b.int_digits.size() ? -1 : 1;
  } else if (a.int_digits != b.int_digits) {
    c = a.int_digits < b.int_digits ? -1 : 1;
  } else {
    const size_t n = std::max(a.frac_digits.size(), b.frac_digits.size());
    std::string x = a.frac_digits, y = b.frac_digits;
    x.resize(n, '0'), y.resize(n, '0');
    c = x == y ? 0 : x < y ? -1 : 1;
  }
  return a_neg ? -c : c;
}

std::optional<expr> number_range(const std::optional<number_bound>& lo,
                                 const std::optional<number_bound>& hi) {
  const decimal zero;
  std::vector<expr> parts;
  // Negative numbers -m: m from |hi| (or just above 0) up to |lo|.
  if (!lo || compare(lo->value, zero) < 0) {
    const bool hi_negative = hi && compare(hi->value, zero) < 0;
    const decimal m_lo = hi_negative ? magnitude(hi->value) : zero;
    const decimal m_hi = lo ? magnitude(lo->value) : zero;
    if (auto m = magnitude_range(m_lo, hi_negative && hi->inclusive, lo ? &m_hi : nullptr,
                                 lo && lo->inclusive))
      parts.push_back(sequence({literal("-"), std::move(*m)}));
  }
  // Non-negative numbers.
  if (!hi || compare(hi->value, zero) >= 0) {
    const bool lo_positive = lo && compare(lo->value, zero) >= 0;
    const decimal m_lo = lo_positive ? lo->value : zero;
    if (auto m = magnitude_range(m_lo, !lo_positive || lo->inclusive, hi ? &hi->value : nullptr,
                                 hi && hi->inclusive))
      parts.push_back(std::move(*m));
  }
  if (parts.empty()) return std::nullopt;
  return alternation(std::move(parts));
}

}  // namespace actorllm::grammar
