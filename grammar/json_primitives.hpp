#pragma once
/// Grammar pieces for JSON values that need no schema context: strings and their
/// characters, numbers, integer ranges, string formats, and object keys outside a set.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

/// One character inside a JSON string as written: any character but `"`, `\` and controls,
/// or an escape (\" \\ \/ \b \f \n \r \t, or \uXXXX outside the surrogates, so every
/// escape is one character of the decoded string).
expr json_string_char();
/// A JSON number (-?int frac? exp?); `nonnegative` leaves out the minus sign.
expr json_number(bool nonnegative);
/// The decimal integers in [lo, hi] (absent: unbounded), written as JSON writes them: no
/// leading zeros, no "-0". Empty alternation when lo > hi.
expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);
/// The text inside the quotes of a string of `format` (date, time, date-time, email, uuid,
/// ipv4), or nullopt for a format not enforced. Dates are real calendar dates (leap years
/// included) from year 1; times are RFC 3339 with an offset.
std::optional<expr> string_format(std::string_view format);
/// A JSON string (quotes included) of plain characters (no escapes) that differs from every
/// one of `names`: an extra object key that cannot repeat a declared property.
expr json_key_not_in(const std::vector<std::string>& names);

}  // namespace actorllm::grammar
