#pragma once
/// JSON numbers between two real bounds (JSON Schema's minimum, maximum, exclusiveMinimum and
/// exclusiveMaximum on "type": "number"), as a regular language over the number's text.
///
/// Bounds are exact decimals (the shortest text that reads back as the schema's double, so
/// `0.1` means one tenth). The numbers are written without an exponent: -?int(.frac)? with no
/// leading zeros and no "-0"; every such text whose decimal value lies within the bounds is
/// accepted, with any number of fraction digits, and no other text.
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

/// An exact decimal: value = (negative ? -1 : 1) * int_digits.frac_digits.
struct decimal {
  bool negative = false;
  std::string int_digits = "0";  // no leading zeros ("0" for none)
  std::string frac_digits;       // no trailing zeros

  bool is_zero() const { return int_digits == "0" && frac_digits.empty(); }
};

/// The decimal a JSON number's text (sign, digits, fraction, exponent) writes exactly, or
/// nullopt when it is not a JSON number or would take more than `max_digits` digits.
std::optional<decimal> parse_decimal(std::string_view text, size_t max_digits = 1000);

/// <0, 0, >0 as a is below, equal to, above b.
int compare(const decimal& a, const decimal& b);

struct number_bound {
  decimal value;
  bool inclusive = true;
};

/// The JSON numbers (without exponent) within the bounds (absent: unbounded on that side), or
/// nullopt when no number lies within them.
std::optional<expr> number_range(const std::optional<number_bound>& lo,
                                 const std::optional<number_bound>& hi);

}  // namespace actorllm::grammar
