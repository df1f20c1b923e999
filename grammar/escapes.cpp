#include "grammar/escapes.hpp"

#include "text/unicode.hpp"

namespace actorllm::grammar {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

namespace {

char32_t parse_hex(std::string_view text, size_t& pos, int digits, size_t escape_at) {
  char32_t value = 0;
  for (int i = 0; i < digits; ++i, ++pos) {
    int v = pos < text.size() ? hex_value(text[pos]) : -1;
    if (v < 0)
      throw escape_error(escape_at, "expected " + std::to_string(digits) + " hex digits in escape");
    value = value * 16 + static_cast<char32_t>(v);
  }
  return value;
}

bool is_ascii_punctuation(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~') || c == ' ';
}

}  // namespace

char32_t parse_escape(std::string_view text, size_t& pos) {
  const size_t at = pos++;
  if (pos >= text.size()) throw escape_error(at, "unterminated escape");
  const char c = text[pos++];
  char32_t cp = 0;
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case '0':
      return 0;
    case 'x':
      cp = parse_hex(text, pos, 2, at);
      break;
    case 'u':
      cp = parse_hex(text, pos, 4, at);
      break;
    case 'U':
      cp = parse_hex(text, pos, 8, at);
      break;
    default:
      if (is_ascii_punctuation(c)) return static_cast<unsigned char>(c);
      throw escape_error(at, std::string("unknown escape '\\") + c + "'");
  }
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    throw escape_error(at, "escape is not a Unicode scalar value");
  return cp;
}

char32_t next_utf8(std::string_view text, size_t& pos) {
  size_t n = unicode::valid_sequence_length(text, pos);
  if (n == 0) throw escape_error(pos, "invalid UTF-8");
  return unicode::next_code_point(text, pos);
}

void append_code_point(std::string& out, char32_t cp) {
  unicode::append_utf8(out, cp);
}

}  // namespace actorllm::grammar
