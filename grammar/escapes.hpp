#pragma once
/// Character-level helpers shared by the GBNF and regex parsers: backslash escapes and UTF-8.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace actorllm::grammar {

/// A malformed escape or invalid UTF-8 at byte `position` of the parsed text.
struct escape_error : std::runtime_error {
  escape_error(size_t at, const std::string& what) : std::runtime_error(what), position(at) {}
  size_t position;
};

/// Reads the escape starting at text[pos] == '\\' and advances pos past it: \n \r \t \f \v
/// \0 \xHH \uHHHH \UHHHHHHHH, and a backslash before any ASCII punctuation (\\ \" \[ \- ...)
/// stands for that character. Throws escape_error for anything else, or for a code point that
/// is not a Unicode scalar value (surrogates, above U+10FFFF).
char32_t parse_escape(std::string_view text, size_t& pos);

/// Decodes the UTF-8 character at text[pos] and advances pos; throws escape_error when the
/// bytes there are not valid UTF-8.
char32_t next_utf8(std::string_view text, size_t& pos);

/// Appends the UTF-8 of `cp`, a Unicode scalar value.
void append_code_point(std::string& out, char32_t cp);

/// The value 0-15 of a hexadecimal digit, or -1.
int hex_value(char c);

}  // namespace actorllm::grammar
