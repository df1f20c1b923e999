#include "tool_calls/python_literal.hpp"

#include <string_view>

#include "tool_calls/whitespace.hpp"

namespace actorllm::tool_calls {
namespace {

constexpr std::size_t kMaxScalarBytes = 400;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}
bool is_number_char(char c) {
  return is_digit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' || c == '_';
}
int hex_digit(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A Python int or float literal (underscores removed) as a JSON number, or "" when it is not
// one: "1." -> "1.0", ".5" -> "0.5", "+2" -> "2"; "01" and "1_" are refused.
std::string python_number_to_json(std::string_view text) {
  std::string out;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    if (text[0] == '-') out += '-';
    text.remove_prefix(1);
  }
  std::size_t i = 0;
  auto digits = [&](std::string& into) {
    const std::size_t start = i;
    while (i < text.size() && (is_digit(text[i]) || text[i] == '_')) {
      if (text[i] == '_' && (i == start || i + 1 >= text.size() || !is_digit(text[i + 1]))) {
        return false;
      }
      if (text[i] != '_') into += text[i];
      ++i;
    }
    return true;
  };
  std::string integer, fraction, exponent;
  if (!digits(integer)) return "";
  const bool has_dot = i < text.size() && text[i] == '.';
  if (has_dot) {
    ++i;
    if (!digits(fraction)) return "";
  }
  if (integer.empty() && fraction.empty()) return "";
  if (integer.size() > 1 && integer[0] == '0' && !has_dot) {
    if (integer.find_first_not_of('0') != std::string::npos) return "";  // 007 is not Python
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exponent += text[i++];
    const std::size_t before = exponent.size();
    if (!digits(exponent) || exponent.size() == before) return "";
  }
  if (i != text.size()) return "";
  // JSON forbids leading zeros: 00 -> 0, 007.5 -> 7.5.
  const std::size_t nonzero = integer.find_first_not_of('0');
  integer = nonzero == std::string::npos ? "0" : integer.substr(nonzero);
  out += integer;
  if (has_dot) {
    out += '.';
    out += fraction.empty() ? std::string_view("0") : std::string_view(fraction);
  }
  if (!exponent.empty()) {
    out += 'e';
    out += exponent;
  }
  return out;
}

}  // namespace

python_literal_reader::status python_literal_reader::feed(char c) {
  const status s = step(c);
  if (s == status::error) state_ = state::error;
  return s;
}

python_literal_reader::status python_literal_reader::step(char c) {
  switch (state_) {
    case state::value:
      if (is_space(c)) return status::more;
      // A closer may follow an opener or a comma, but not a dict key's colon.
      if (!stack_.empty() && c == stack_.back().closer &&
          (stack_.back().closer != '}' || stack_.back().in_key)) {
        return close(c);
      }
      return begin_value(c);
    case state::colon:
      if (is_space(c)) return status::more;
      if (c != ':') return status::error;
      json_ += ": ";
      stack_.back().in_key = false;
      state_ = state::value;
      return status::more;
    case state::after_value:
      if (is_space(c)) return status::more;
      if (c == ',') {
        // A trailing comma before the closer is Python.
        stack_.back().in_key = stack_.back().closer == '}';
        state_ = state::value;
        return status::more;
      }
      return close(c);
    case state::string:
      if (c == quote_) return end_value(true);
      if (c == '\\') {
        state_ = state::string_escape;
        return status::more;
      }
      if (c == '\n') return status::error;  // not in a one-line Python string
      if (c == '"') {
        json_ += "\\\"";
      } else if (static_cast<unsigned char>(c) < 0x20) {
        write_escaped_code(static_cast<unsigned char>(c));
      } else {
        json_ += c;
      }
      return status::more;
    case state::string_escape:
      state_ = state::string;
      switch (c) {
        case '\\':
          json_ += "\\\\";
          break;
        case '\'':
          json_ += '\'';
          break;
        case '"':
          json_ += "\\\"";
          break;
        case 'n':
          json_ += "\\n";
          break;
        case 't':
          json_ += "\\t";
          break;
        case 'r':
          json_ += "\\r";
          break;
        case 'b':
          json_ += "\\b";
          break;
        case 'f':
          json_ += "\\f";
          break;
        case 'a':
          write_escaped_code(0x07);
          break;
        case 'v':
          write_escaped_code(0x0b);
          break;
        case '0':
          write_escaped_code(0);
          break;
        case '\n':
          break;  // a line continuation
        case 'x':
        case 'u':
          hex_left_ = c == 'x' ? 2 : 4;
          hex_value_ = 0;
          state_ = state::string_hex;
          break;
        default:
          // Python keeps an unknown escape as written, backslash included.
          json_ += "\\\\";
          if (c == '"' || static_cast<unsigned char>(c) < 0x20) return status::error;
          json_ += c;
      }
      return status::more;
    case state::string_hex: {
      const int d = hex_digit(c);
      if (d < 0) return status::error;
      hex_value_ = hex_value_ * 16 + static_cast<unsigned>(d);
      if (--hex_left_ == 0) {
        write_escaped_code(hex_value_);
        state_ = state::string;
      }
      return status::more;
    }
    case state::number:
    case state::word:
      if (state_ == state::number ? is_number_char(c) : is_word_char(c)) {
        scalar_ += c;
        return scalar_.size() <= kMaxScalarBytes ? status::more : status::error;
      }
      if (!end_scalar()) return status::error;
      {
        const status s = end_value(false);
        if (s != status::more) return s;
      }
      return step(c);
    case state::done:
    case state::error:
      return status::error;
  }
  return status::error;
}

python_literal_reader::status python_literal_reader::begin_value(char c) {
  if (!stack_.empty()) {
    frame& f = stack_.back();
    if (f.count > 0 && (f.closer != '}' || f.in_key)) json_ += ", ";
    if (f.in_key && c != '\'' && c != '"') return status::error;  // JSON keys are strings
  }
  if (c == '[' || c == '(' || c == '{') {
    if (stack_.size() >= max_depth_) return status::error;
    stack_.push_back({.closer = c == '[' ? ']' : c == '(' ? ')' : '}', .in_key = c == '{'});
    json_ += c == '{' ? '{' : '[';
    state_ = state::value;
    return status::more;
  }
  if (c == '\'' || c == '"') {
    quote_ = c;
    json_ += '"';
    state_ = state::string;
    return status::more;
  }
  scalar_.assign(1, c);
  if (is_digit(c) || c == '-' || c == '+' || c == '.') {
    state_ = state::number;
    return status::more;
  }
  if (is_word_char(c)) {
    state_ = state::word;
    return status::more;
  }
  return status::error;
}

bool python_literal_reader::end_scalar() {
  if (state_ == state::word) {
    if (scalar_ == "True")
      json_ += "true";
    else if (scalar_ == "False")
      json_ += "false";
    else if (scalar_ == "None")
      json_ += "null";
    else
      return false;
    return true;
  }
  const std::string number = python_number_to_json(scalar_);
  json_ += number;
  return !number.empty();
}

// A value ended: with the last byte (consumed) or just before the current byte.
python_literal_reader::status python_literal_reader::end_value(bool consumed) {
  if (state_ == state::string) json_ += '"';
  if (stack_.empty()) {
    state_ = state::done;
    return consumed ? status::done : status::done_before;
  }
  frame& f = stack_.back();
  if (f.in_key) {
    state_ = state::colon;
  } else {
    ++f.count;
    state_ = state::after_value;
  }
  return status::more;
}

python_literal_reader::status python_literal_reader::close(char c) {
  if (stack_.empty() || c != stack_.back().closer) return status::error;
  json_ += c == '}' ? '}' : ']';
  stack_.pop_back();
  state_ = state::after_value;
  return end_value(true);
}

void python_literal_reader::write_escaped_code(unsigned value) {
  static constexpr std::string_view hex = "0123456789abcdef";
  if (value >= 0x20 && value < 0x7f && value != '"' && value != '\\') {
    json_ += static_cast<char>(value);
    return;
  }
  json_ += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) json_ += hex[(value >> shift) & 0xf];
}

}  // namespace actorllm::tool_calls
