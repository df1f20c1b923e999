#include "chat_template/jinja_lexer.hpp"

#include <cstring>
#include <stdexcept>

#include "chat_template/jinja_value.hpp"
#include "text/unicode.hpp"

namespace actorllm::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int line_at(std::string_view s, size_t pos, size_t from, int line) {
  for (size_t i = from; i < pos; ++i)
    if (s[i] == '\n') ++line;
  return line;
}

// End of a tag: the position of `close` outside string literals, or npos.
size_t find_close(std::string_view s, size_t pos, std::string_view close) {
  char quote = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (s.compare(i, close.size(), close) == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::vector<chunk> split_template(std::string_view src, bool trim_blocks, bool lstrip_blocks) {
  std::vector<chunk> out;
  size_t pos = 0;
  int line = 1;
  size_t line_pos = 0;      // `line` is the line of src[line_pos]
  bool strip_next = false;  // the previous tag ended with '-'
  bool trim_next = false;   // the previous block or comment asks for trim_blocks
  while (pos <= src.size()) {
    size_t open = src.find('{', pos);
    while (open != std::string_view::npos && open + 1 < src.size() &&
           std::strchr("{%#", src[open + 1]) == nullptr)
      open = src.find('{', open + 1);
    if (open != std::string_view::npos && open + 1 >= src.size()) open = std::string_view::npos;
    size_t text_end = open == std::string_view::npos ? src.size() : open;

    size_t begin = pos;
    if (trim_next && begin < text_end && src[begin] == '\n') ++begin;
    if (strip_next)
      while (begin < text_end && is_space(src[begin])) ++begin;
    size_t end = text_end;
    char type = open == std::string_view::npos ? 0 : src[open + 1];
    char modifier = type && open + 2 < src.size() ? src[open + 2] : 0;
    if (type && modifier == '-') {
      while (end > begin && is_space(src[end - 1])) --end;
    } else if (type && type != '{' && modifier != '+' && lstrip_blocks) {
      size_t l = end;
      while (l > begin && (src[l - 1] == ' ' || src[l - 1] == '\t')) --l;
      bool line_start = l == 0 || src[l - 1] == '\n';
      if (line_start && (l > begin || begin == 0 || src[begin - 1] == '\n')) end = l;
    }
    if (end > begin) {
      line = line_at(src, begin, line_pos, line);
      line_pos = begin;
      out.push_back({chunk::kind::text, std::string(src.substr(begin, end - begin)), line});
    }
    if (!type) break;

    line = line_at(src, open, line_pos, line);
    line_pos = open;
    size_t inner = open + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
    std::string_view close = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    size_t close_pos = type == '#' ? src.find(close, inner) : find_close(src, inner, close);
    if (close_pos == std::string_view::npos)
      throw error(std::string("unterminated ") + (type == '#' ? "comment" : "tag"), line);
    size_t content_end = close_pos;
    char end_modifier = close_pos > inner ? src[close_pos - 1] : 0;
    strip_next = end_modifier == '-';
    if (end_modifier == '-' || (end_modifier == '+' && type != '{')) --content_end;
    trim_next = type != '{' && trim_blocks && end_modifier != '+';
    if (type != '#') {
      out.push_back({type == '{' ? chunk::kind::output : chunk::kind::statement,
                     std::string(src.substr(inner, content_end - inner)), line});
    }
    pos = close_pos + 2;
  }
  return out;
}

namespace {

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string read_string(std::string_view s, size_t& i, int line) {
  char quote = s[i++];
  std::string out;
  while (i < s.size() && s[i] != quote) {
    char c = s[i++];
    if (c != '\\' || i >= s.size()) {
      out.push_back(c);
      continue;
    }
    char e = s[i++];
    switch (e) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case '0':
        out.push_back('\0');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case '\n':
        break;
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (i + n > s.size()) throw error("bad escape in string literal", line);
        char32_t cp = static_cast<char32_t>(std::stoul(std::string(s.substr(i, n)), nullptr, 16));
        unicode::append_utf8(out, cp);
        i += n;
        break;
      }
      default:
        out.push_back('\\');
        out.push_back(e);
    }
  }
  if (i >= s.size()) throw error("unterminated string literal", line);
  ++i;
  return out;
}

}  // namespace

std::vector<token> tokenize_expression(std::string_view s, int line) {
  static const char* const operators[] = {"==", "!=", "<=", ">=", "//", "**", "<", ">", "+",
                                          "-",  "*",  "/",  "%",  "~",  "|",  ".", ",", ":",
                                          "(",  ")",  "[",  "]",  "{",  "}",  "="};
  std::vector<token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (is_space(c)) {
      if (c == '\n') ++line;
      ++i;
      continue;
    }
    token t{token::kind::op, "", 0, 0, line};
    if (is_name_start(c)) {
      size_t b = i;
      while (i < s.size() && (is_name_start(s[i]) || is_digit(s[i]))) ++i;
      t.type = token::kind::name;
      t.text = s.substr(b, i - b);
    } else if (is_digit(c)) {
      size_t b = i;
      while (i < s.size() && (is_digit(s[i]) || s[i] == '_')) ++i;
      bool is_float = false;
      if (i + 1 < s.size() && s[i] == '.' && is_digit(s[i + 1])) {
        is_float = true;
        ++i;
        while (i < s.size() && is_digit(s[i])) ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        is_float = true;
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        while (i < s.size() && is_digit(s[i])) ++i;
      }
      std::string text;
      for (char d : s.substr(b, i - b))
        if (d != '_') text.push_back(d);
      t.text = text;
      try {
        if (is_float) {
          t.type = token::kind::number;
          t.number = std::stod(text);
        } else {
          t.type = token::kind::integer;
          t.integer = std::stoll(text);
        }
      } catch (const std::out_of_range&) {  // 64-bit integers and doubles only
        throw error("number " + text + " is out of range (overflow)", line);
      }
    } else if (c == '\'' || c == '"') {
      t.type = token::kind::string;
      t.text = read_string(s, i, line);
    } else {
      for (const char* op : operators) {
        size_t n = std::strlen(op);
        if (s.compare(i, n, op) == 0) {
          t.text = op;
          i += n;
          break;
        }
      }
      if (t.text.empty()) throw error(std::string("unexpected character '") + c + "'", line);
    }
    out.push_back(std::move(t));
  }
  out.push_back({token::kind::end, "", 0, 0, line});
  return out;
}

}  // namespace actorllm::jinja
