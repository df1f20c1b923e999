#include "chat_template/jinja_methods.hpp"

#include <algorithm>
#include <array>

#include "chat_template/jinja_builtins.hpp"
#include "text/unicode.hpp"

namespace actorllm::jinja {
namespace {

constexpr std::array string_methods = {
    "strip",   "lstrip",  "rstrip",     "split",   "rsplit",     "upper",
    "lower",   "title",   "capitalize", "replace", "startswith", "endswith",
    "find",    "rfind",   "count",      "join",    "isdigit",    "isalpha",
    "isalnum", "isspace", "isupper",    "islower", "splitlines", "format"};
constexpr std::array dict_methods = {"items", "keys", "values", "get"};

bool python_space(char32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<std::pair<size_t, char32_t>> code_points(const std::string& s) {
  std::vector<std::pair<size_t, char32_t>> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t start = pos;
    out.emplace_back(start, unicode::next_code_point(s, pos));
  }
  return out;
}

std::string strip(const std::string& s, const value& chars, bool left, bool right) {
  std::vector<char32_t> set;
  bool whitespace = chars.is_undefined() || chars.is_none();
  if (!whitespace)
    for (auto [pos, cp] : code_points(chars.as_string())) set.push_back(cp);
  auto strip_it = [&](char32_t c) {
    return whitespace ? python_space(c) : std::find(set.begin(), set.end(), c) != set.end();
  };
  auto cps = code_points(s);
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b].second)) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1].second)) --e;
  size_t from = b < cps.size() ? cps[b].first : s.size();
  size_t to = e < cps.size() ? cps[e].first : s.size();
  return s.substr(from, to - from);
}

value split(const std::string& s, const value& sep, int64_t max_split) {
  value_list out;
  if (sep.is_undefined() || sep.is_none()) {
    auto cps = code_points(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && python_space(cps[i].second)) ++i;
      if (i == cps.size()) break;
      if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
        out.emplace_back(strip(s.substr(cps[i].first), value(), false, true));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !python_space(cps[j].second)) ++j;
      size_t end = j < cps.size() ? cps[j].first : s.size();
      out.emplace_back(s.substr(cps[i].first, end - cps[i].first));
      i = j;
    }
    return value(std::move(out));
  }
  const std::string& d = sep.as_string();
  if (d.empty()) throw error("empty separator");
  size_t pos = 0;
  while (true) {
    size_t hit = s.find(d, pos);
    if (hit == std::string::npos ||
        (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split)) {
      out.emplace_back(s.substr(pos));
      break;
    }
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + d.size();
  }
  return value(std::move(out));
}

std::string map_ascii(const std::string& s, bool upper) {
  std::string out = s;
  for (char& c : out) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool all_ascii(const std::string& s, int (*pred)(int)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return pred(static_cast<unsigned char>(c)) != 0;
  });
}

value string_method(const std::string& s, const std::string& name, value_list& args) {
  const value none;
  const value& a0 = args.size() > 0 ? args[0] : none;
  const value& a1 = args.size() > 1 ? args[1] : none;
  if (name == "strip") return value(strip(s, a0, true, true));
  if (name == "lstrip") return value(strip(s, a0, true, false));
  if (name == "rstrip") return value(strip(s, a0, false, true));
  if (name == "split" || name == "rsplit") {
    if (name == "rsplit" && a1.is_number() && a1.as_int() >= 0)
      throw error("rsplit with maxsplit is not supported");
    return split(s, a0, a1.is_number() ? a1.as_int() : -1);
  }
  if (name == "upper") return value(map_ascii(s, true));
  if (name == "lower") {
    // Only a value built by hand can hold bytes that are not UTF-8; refuse them by name.
    if (!unicode::is_valid_utf8(s)) throw error("lower() of a string that is not valid UTF-8");
    return value(unicode::to_lower(s));
  }
  if (name == "capitalize" || name == "title") {
    std::string out = map_ascii(s, false);
    bool start = true;
    for (char& c : out) {
      if (start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      start = name == "title" ? !std::isalpha(static_cast<unsigned char>(c)) : false;
    }
    return value(std::move(out));
  }
  if (name == "replace") {
    std::string from = a0.str(), to = a1.str(), out;
    int64_t count = args.size() > 2 ? args[2].as_int() : -1;
    if (from.empty()) throw error("replace with an empty pattern is not supported");
    size_t pos = 0;
    for (int64_t n = 0; count < 0 || n < count; ++n) {
      size_t hit = s.find(from, pos);
      if (hit == std::string::npos) break;
      out.append(s, pos, hit - pos).append(to);
      pos = hit + from.size();
    }
    return value(out.append(s, pos));
  }
  if (name == "startswith" || name == "endswith") {
    value_list options = a0.is_list() ? a0.as_list() : value_list{a0};
    for (const value& o : options) {
      const std::string& p = o.as_string();
      bool hit = name == "startswith"
                     ? s.compare(0, p.size(), p) == 0
                     : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
      if (hit) return value(true);
    }
    return value(false);
  }
  if (name == "find" || name == "rfind") {
    size_t hit = name == "find" ? s.find(a0.str()) : s.rfind(a0.str());
    if (hit == std::string::npos) return value(-1);
    return value(static_cast<int64_t>(code_points(s.substr(0, hit)).size()));
  }
  if (name == "count") {
    std::string p = a0.str();
    int64_t n = 0;
    for (size_t pos = s.find(p); !p.empty() && pos != std::string::npos;
         pos = s.find(p, pos + p.size()))
      ++n;
    return value(n);
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    // Python's str.join takes any iterable: a string's characters, a dict's keys.
    for (const value& v : iterate(a0)) {
      if (!first) out += s;
      first = false;
      out += v.str();
    }
    return value(std::move(out));
  }
  if (name == "isdigit") return value(all_ascii(s, ::isdigit));
  if (name == "isalpha") return value(all_ascii(s, ::isalpha));
  if (name == "isalnum") return value(all_ascii(s, ::isalnum));
  if (name == "isspace") return value(all_ascii(s, ::isspace));
  if (name == "isupper") return value(s != map_ascii(s, false) && s == map_ascii(s, true));
  if (name == "islower") return value(s != map_ascii(s, true) && s == map_ascii(s, false));
  if (name == "splitlines") {
    value_list out;
    size_t pos = 0;
    while (pos < s.size()) {
      size_t nl = s.find('\n', pos);
      if (nl == std::string::npos) nl = s.size();
      std::string line = s.substr(pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      out.emplace_back(line);
      pos = nl + 1;
    }
    return value(std::move(out));
  }
  throw error("str." + name + "() is not supported");
}

value dict_method(const value_dict& d, const std::string& name, value_list& args) {
  if (name == "items" || name == "keys" || name == "values") {
    value_list out;
    for (const auto& [k, v] : d.items) {
      if (name == "items")
        out.push_back(value::tuple(value_list{value(k), v}));
      else
        out.push_back(name == "keys" ? value(k) : v);
    }
    return value(std::move(out));
  }
  if (args.empty()) throw error("dict.get() needs a key");
  const value* found = args[0].is_string() ? d.find(args[0].as_string()) : nullptr;
  return found ? *found : (args.size() > 1 ? args[1] : value::none());
}

}  // namespace

value bound_method(const value& obj, const std::string& name) {
  bool known = (obj.is_string() && std::find(string_methods.begin(), string_methods.end(), name) !=
                                       string_methods.end()) ||
               (obj.is_dict() && !obj.as_dict().is_namespace &&
                std::find(dict_methods.begin(), dict_methods.end(), name) != dict_methods.end());
  if (!known) return value();
  return value(value_function{name, [obj, name](value_list& args, keyword_args& kwargs) {
                                return call_method(obj, name, args, kwargs);
                              }});
}

value call_method(const value& obj, const std::string& name, value_list& args,
                  keyword_args& kwargs) {
  for (auto& [k, v] : kwargs) {
    // The keyword forms templates use map onto positions.
    if (k == "chars" || k == "sep")
      args.insert(args.begin(), v);
    else if (k == "maxsplit")
      args.resize(std::max<size_t>(args.size(), 1)), args.push_back(v);
    else
      throw error("unexpected keyword argument '" + k + "' for " + name + "()");
  }
  kwargs.clear();
  if (obj.is_string()) return string_method(obj.as_string(), name, args);
  if (obj.is_dict()) return dict_method(obj.as_dict(), name, args);
  throw error("'" + obj.type_name() + "' object has no attribute '" + name + "'");
}

}  // namespace actorllm::jinja
