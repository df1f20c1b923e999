#include "api/json_numbers.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "api/json_text.hpp"

namespace actorllm::api {

namespace {

bool starts_number(char c) {
  return c == '-' || (c >= '0' && c <= '9');
}
bool in_number(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/// Whether strtod overflows on the number `token` (an underflow to 0 is a double, and kept).
bool overflows(const std::string& token) {
  errno = 0;
  const double v = std::strtod(token.c_str(), nullptr);
  return errno == ERANGE && std::isinf(v);
}

}  // namespace

nlohmann::json parse_keeping_huge_numbers(std::string_view text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  // Quote every number that overflows, outside strings, and read again.
  std::string quoted;
  quoted.reserve(text.size() + 16);
  json_string_scan scan;
  bool changed = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (scan.step(c) || !starts_number(c)) {
      quoted += c;
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && in_number(text[end])) ++end;
    const std::string token(text.substr(i, end - i));
    if (overflows(token)) {
      quoted += '"' + token + '"';
      changed = true;
    } else {
      quoted += token;
    }
    i = end;
  }
  if (!changed) return parsed;
  return nlohmann::json::parse(quoted, nullptr, false);
}

}  // namespace actorllm::api
