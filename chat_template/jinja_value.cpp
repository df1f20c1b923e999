#include "chat_template/jinja_value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "text/unicode.hpp"

namespace actorllm::jinja {

value* value_dict::find(std::string_view key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

const value* value_dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void value_dict::set(const std::string& key, value v) {
  if (value* existing = find(key))
    *existing = std::move(v);
  else
    items.emplace_back(key, std::move(v));
}

value value::none() {
  value v;
  v.kind_ = kind::none;
  return v;
}

value value::undefined(std::string name) {
  value v;
  v.string_ = std::move(name);
  return v;
}

value::value(value_list l) : kind_(kind::list), list_(std::make_shared<value_list>(std::move(l))) {}
value value::tuple(value_list l) {
  value v(std::move(l));
  v.tuple_ = true;
  return v;
}

value::value(value_dict d) : kind_(kind::dict), dict_(std::make_shared<value_dict>(std::move(d))) {}
value::value(value_function f)
    : kind_(kind::function), function_(std::make_shared<const value_function>(std::move(f))) {}

int64_t value::as_int() const {
  if (kind_ != kind::number) return int_;
  // -2^63 and 2^63 are exact as doubles; outside [-2^63, 2^63) (or NaN) is no int64_t.
  if (!(number_ >= -9223372036854775808.0 && number_ < 9223372036854775808.0))
    throw error("cannot convert float " + format_double(number_) + " to integer (overflow)");
  return static_cast<int64_t>(number_);
}

double value::as_double() const {
  return kind_ == kind::number ? number_ : static_cast<double>(int_);
}

bool value::truthy() const {
  switch (kind_) {
    case kind::undefined:
    case kind::none:
      return false;
    case kind::boolean:
    case kind::integer:
      return int_ != 0;
    case kind::number:
      return number_ != 0;
    case kind::string:
      return !string_.empty();
    case kind::list:
      return !list_->empty();
    case kind::dict:
      return !dict_->items.empty();
    case kind::function:
      return true;
  }
  return false;
}

std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's repr layout: scientific when the exponent is
  // below -4 or at least 16, else positional with at least one decimal.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exponent = std::stoi(sci.substr(e + 1));
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits.push_back(c);
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return out + "0." + std::string(-exponent - 1, '0') + digits;
  if (static_cast<int>(digits.size()) <= exponent + 1)
    return out + digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
  return out + digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
}

namespace {

std::string repr_string(const std::string& s) {
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    size_t start = pos;
    char32_t cp = unicode::next_code_point(s, pos);
    char buf[16];
    if (cp == '\\')
      out += "\\\\";
    else if (cp == static_cast<char32_t>(quote))
      out += std::string("\\") + quote;
    else if (cp == '\n')
      out += "\\n";
    else if (cp == '\r')
      out += "\\r";
    else if (cp == '\t')
      out += "\\t";
    else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else
      out.append(s, start, pos - start);
  }
  out.push_back(quote);
  return out;
}

void json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void to_json_into(std::string& out, const value& v, int indent, int level) {
  auto newline = [&](int lvl) {
    out.push_back('\n');
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (v.type()) {
    case value::kind::undefined:
    case value::kind::none:
      out += "null";
      return;
    case value::kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case value::kind::integer:
      out += std::to_string(v.as_int());
      return;
    case value::kind::number: {
      double d = v.as_double();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : format_double(d);
      return;
    }
    case value::kind::string:
      json_string(out, v.as_string());
      return;
    case value::kind::list: {
      const auto& l = v.as_list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        to_json_into(out, l[i], indent, level + 1);
      }
      if (indent >= 0) newline(level);
      out.push_back(']');
      return;
    }
    case value::kind::dict: {
      const auto& d = v.as_dict().items;
      if (d.empty()) {
        out += "{}";
        return;
      }
      out.push_back('{');
      for (size_t i = 0; i < d.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        json_string(out, d[i].first);
        out += ": ";
        to_json_into(out, d[i].second, indent, level + 1);
      }
      if (indent >= 0) newline(level);
      out.push_back('}');
      return;
    }
    case value::kind::function:
      throw error("Object of type function is not JSON serializable");
  }
}

}  // namespace

std::string value::str() const {
  switch (kind_) {
    case kind::undefined:
      return "";
    case kind::string:
      return string_;
    default:
      return repr();
  }
}

std::string value::repr() const {
  switch (kind_) {
    case kind::undefined:
      return "";
    case kind::none:
      return "None";
    case kind::boolean:
      return int_ ? "True" : "False";
    case kind::integer:
      return std::to_string(int_);
    case kind::number:
      return format_double(number_);
    case kind::string:
      return repr_string(string_);
    case kind::list: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case kind::dict: {
      if (dict_->is_namespace) return "<Namespace>";
      std::string out = "{";
      for (size_t i = 0; i < dict_->items.size(); ++i)
        out += (i ? ", " : "") + repr_string(dict_->items[i].first) + ": " +
               dict_->items[i].second.repr();
      return out + "}";
    }
    case kind::function:
      return "<function " + function_->name + ">";
  }
  return "";
}

std::string value::to_json(int indent) const {
  std::string out;
  to_json_into(out, *this, indent, 0);
  return out;
}

std::string value::type_name() const {
  switch (kind_) {
    case kind::undefined:
      return "Undefined";
    case kind::none:
      return "NoneType";
    case kind::boolean:
      return "bool";
    case kind::integer:
      return "int";
    case kind::number:
      return "float";
    case kind::string:
      return "str";
    case kind::list:
      return "list";
    case kind::dict:
      return "dict";
    case kind::function:
      return "function";
  }
  return "";
}

value value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
      return value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      value_list l;
      for (const auto& x : j) l.push_back(from_json(x));
      return value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      value_dict d;
      for (const auto& [k, x] : j.items()) d.items.emplace_back(k, from_json(x));
      return value(std::move(d));
    }
    default:
      return value();
  }
}

bool equals(const value& a, const value& b) {
  using k = value::kind;
  if (a.is_number() && b.is_number()) {
    if (a.type() == k::number || b.type() == k::number) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case k::undefined:
    case k::none:
      return true;
    case k::string:
      return a.as_string() == b.as_string();
    case k::list: {
      const auto &x = a.as_list(), &y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case k::dict: {
      const auto &x = a.as_dict(), &y = b.as_dict();
      if (&x == &y) return true;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [key, v] : x.items) {
        const value* other = y.find(key);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case k::function:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

bool less(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const auto &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  throw error("'<' not supported between instances of '" + a.type_name() + "' and '" +
              b.type_name() + "'");
}

int64_t integer_op(std::string_view op, int64_t a, int64_t b) {
  const auto overflow = [&]() -> int64_t {
    throw error("integer overflow in " + std::to_string(a) + " " + std::string(op) + " " +
                std::to_string(b));
  };
  int64_t r = 0;
  if (op == "+") return __builtin_add_overflow(a, b, &r) ? overflow() : r;
  if (op == "-") return __builtin_sub_overflow(a, b, &r) ? overflow() : r;
  if (op == "*") return __builtin_mul_overflow(a, b, &r) ? overflow() : r;
  if (op == "**") {  // b >= 0; by squaring, so that 1 ** 10**12 ends at once
    int64_t base = a;
    r = 1;
    for (int64_t e = b; e > 0; e >>= 1) {
      if ((e & 1) && __builtin_mul_overflow(r, base, &r)) return overflow();
      if (e > 1 && __builtin_mul_overflow(base, base, &base)) return overflow();
    }
    return r;
  }
  if (b == 0) throw error("integer division or modulo by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) {
    if (op == "%") return 0;
    return overflow();  // the quotient 2^63 (x86 traps on it)
  }
  int64_t q = a / b;  // Python floors toward negative infinity
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  if (op == "//") return q;
  return a - q * b;  // "%"
}

}  // namespace actorllm::jinja
