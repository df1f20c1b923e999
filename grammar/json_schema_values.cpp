#include <cmath>
#include <set>

#include "grammar/grammar_error.hpp"
#include "grammar/json_primitives.hpp"
#include "grammar/json_schema_converter.hpp"
#include "grammar/regex_parser.hpp"

namespace actorllm::grammar {
namespace {

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

}  // namespace

using json = schema_json;

// A non-negative integer keyword, or `fallback` when absent.
int64_t json_schema_converter::count(const json& s, const char* key, int64_t fallback,
                                     const std::string& where) {
  if (!s.contains(key)) return fallback;
  const json& v = s[key];
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()))
    fail(where, std::string(key) + " must be a non-negative integer");
  if (v.get<double>() > 100000) fail(where, std::string(key) + " above 100000 is not enforced");
  return static_cast<int64_t>(v.get<double>());
}

expr json_schema_converter::string_value(const json& s, const std::string& where) {
  const int64_t min = count(s, "minLength", 0, where), max = count(s, "maxLength", -1, where);
  if (max >= 0 && max < min) fail(where, "minLength above maxLength");
  if (!s.contains("format") && !s.contains("pattern"))
    return string_rule(where, repeat(string_char(), int32_t(min), int32_t(max)));
  expr body;
  if (s.contains("format")) {
    if (s.contains("pattern")) fail(where, "format together with pattern is not enforced");
    const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
    auto format = string_format(f);
    if (!format) fail(where, "format '" + f + "' is not enforced");
    body = std::move(*format);
  } else {
    if (!s["pattern"].is_string()) fail(where, "pattern must be a string");
    try {
      body = parse_regex(s["pattern"].get<std::string>(), regex_output::json_string);
    } catch (const grammar_error& e) {
      fail(where + "/pattern", e.what());
    }
  }
  // Lengths with a format or pattern: the texts of both, by a counter beside the regex's
  // automaton (its size is bounded by the automaton builder's state budget).
  if (min > 0 || max >= 0) body = char_count(std::move(body), int32_t(min), int32_t(max));
  return string_rule(where, std::move(body));
}

// An integer bound, or nullopt when absent; `lower` rounds up, else down.
std::optional<int64_t> json_schema_converter::bound(const json& s, bool lower,
                                                    const std::string& where) {
  const char* inclusive = lower ? "minimum" : "maximum";
  const char* exclusive = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  std::optional<double> b;
  bool open = false;
  if (s.contains(inclusive)) {
    if (!s[inclusive].is_number()) fail(where, std::string(inclusive) + " must be a number");
    b = s[inclusive].get<double>();
  }
  if (s.contains(exclusive)) {
    const json& e = s[exclusive];
    if (e.is_boolean()) {  // draft 4: modifies minimum / maximum
      open = e.get<bool>() && b.has_value();
    } else if (e.is_number()) {
      double x = e.get<double>();
      if (!b || (lower ? x >= *b : x <= *b)) b = x, open = true;
    } else {
      fail(where, std::string(exclusive) + " must be a number");
    }
  }
  if (!b) return std::nullopt;
  double v = lower ? std::ceil(*b) : std::floor(*b);
  if (open && v == *b) v += lower ? 1 : -1;
  if (std::fabs(v) > 9e18) fail(where, std::string(inclusive) + " out of range");
  return static_cast<int64_t>(v);
}

expr json_schema_converter::integer_value(const json& s, const std::string& where) {
  const std::optional<int64_t> lo = bound(s, true, where), hi = bound(s, false, where);
  if (!s.contains("multipleOf")) return integer_range(lo, hi);
  const json& m = s["multipleOf"];
  if (!m.is_number() || m.get<double>() <= 0 || m.get<double>() != std::floor(m.get<double>()) ||
      m.get<double>() > max_multiple)
    fail(where,
         "multipleOf on an integer must be a whole number in 1.." + std::to_string(max_multiple));
  return integer_multiples(static_cast<int64_t>(m.get<double>()), lo, hi, where);
}

expr json_schema_converter::integer_multiples(int64_t k, std::optional<int64_t> lo,
                                              std::optional<int64_t> hi, const std::string& where) {
  if (k == 1) return integer_range(lo, hi);
  // Few enough multiples between the bounds: each one, written out.
  if (lo && hi) {
    if (*lo > *hi) return alternation({});
    const int64_t first = *lo >= 0 ? (*lo + k - 1) / k : -((-*lo) / k);
    const int64_t last = *hi >= 0 ? *hi / k : -((-*hi + k - 1) / k);
    if (last - first + 1 <= max_listed_multiples) {
      std::vector<expr> values;
      for (int64_t i = first; i <= last; ++i) values.push_back(literal(std::to_string(i * k)));
      return alternation(std::move(values));
    }
  }
  // Otherwise the decimal digits read into their value modulo k, one rule per remainder:
  // after a prefix of remainder r, digit d leads to (10 r + d) mod k, and the number may end at
  // remainder 0. Bounds are kept only where they cut at 0 (minimum 0 or 1, no maximum).
  const bool nonnegative = lo && (*lo == 0 || *lo == 1) && !hi;
  if ((lo || hi) && !nonnegative)
    fail(where, "multipleOf with bounds spanning more than " +
                    std::to_string(max_listed_multiples) +
                    " multiples is enforced only with minimum 0 (or exclusiveMinimum 0)");
  std::vector<int32_t> remainder(static_cast<size_t>(k));
  for (int64_t r = 0; r < k; ++r) remainder[r] = new_rule(where + "/multipleOf");
  const auto after = [&](int64_t r, int d) {
    return sequence(
        {literal(std::string(1, char('0' + d))), rule_ref(remainder[(10 * r + d) % k])});
  };
  for (int64_t r = 0; r < k; ++r) {
    std::vector<expr> next;
    if (r == 0) next.push_back(empty());
    for (int d = 0; d <= 9; ++d) next.push_back(after(r, d));
    ir_.rules[remainder[r]].body = alternation(std::move(next));
  }
  std::vector<expr> leading;  // no leading zeros: the first digit is 1..9
  for (int d = 1; d <= 9; ++d) leading.push_back(after(0, d));
  expr positive = alternation(std::move(leading));
  std::vector<expr> parts;
  if (!(lo && *lo == 1)) parts.push_back(literal("0"));
  if (!nonnegative) parts.push_back(sequence({literal("-"), positive}));
  parts.push_back(std::move(positive));
  return alternation(std::move(parts));
}

// A bound on a number as an exact decimal, or nullopt when absent; the tighter of an
// inclusive and an exclusive bound on the same side.
std::optional<number_bound> json_schema_converter::number_limit(const json& s, bool lower,
                                                                const std::string& where) {
  const char* inclusive = lower ? "minimum" : "maximum";
  const char* exclusive = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  const auto read = [&](const char* key) {
    std::optional<decimal> d;
    if (s[key].is_number()) d = parse_decimal(s[key].dump());
    if (!d) fail(where, std::string(key) + " must be a finite number");
    return *d;
  };
  std::optional<number_bound> b;
  if (s.contains(inclusive)) b = number_bound{read(inclusive), true};
  if (s.contains(exclusive)) {
    if (s[exclusive].is_boolean()) {  // draft 4: modifies minimum / maximum
      if (b) b->inclusive = !s[exclusive].get<bool>();
    } else {
      const decimal x = read(exclusive);
      const int c = b ? compare(x, b->value) : 0;
      if (!b || (lower ? c >= 0 : c <= 0)) b = number_bound{x, false};
    }
  }
  return b;
}

expr json_schema_converter::number_value(const json& s, const std::string& where) {
  if (!has_any(s, number_keywords)) return json_number(false);
  auto range = number_range(number_limit(s, true, where), number_limit(s, false, where));
  if (!range) fail(where, "no number lies within the bounds");
  return *range;
}

expr json_schema_converter::object_value(const json& s, const std::string& where) {
  struct property {
    std::string name;
    json schema;
    bool required;
  };
  std::vector<property> props;
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) fail(where, "required must be an array");
    for (const auto& r : s["required"]) {
      if (!r.is_string()) fail(where, "required must list strings");
      required.insert(r.get<std::string>());
    }
  }
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) fail(where, "properties must be an object");
    for (const auto& [name, schema] : s["properties"].items()) {
      if (schema == false) {
        if (required.count(name))
          fail(where, "required property '" + name + "' has the schema false");
        continue;
      }
      props.push_back({name, schema, required.count(name) > 0});
    }
  }
  // Extra properties: absent or false → none written.
  std::optional<json> extra;
  const bool closed = s.contains("additionalProperties") && s["additionalProperties"] == false;
  if (s.contains("additionalProperties") && !closed) extra = s["additionalProperties"];
  for (const auto& name : required) {
    bool declared = false;
    for (const auto& p : props) declared |= p.name == name;
    if (declared) continue;
    if (closed)
      fail(where, "required property '" + name + "' is forbidden by additionalProperties false");
    props.push_back({name, extra ? *extra : json(true), true});
  }
  const int64_t min_props = count(s, "minProperties", 0, where);
  if (min_props > static_cast<int64_t>(required.size()))
    fail(where, "minProperties above the number of required properties is not enforced");
  if (s.contains("maxProperties") &&
      (extra || count(s, "maxProperties", 0, where) < int64_t(props.size())))
    fail(where, "maxProperties below the number of properties is not enforced");

  const size_t n = props.size();
  std::vector<std::string> names;
  std::vector<expr> members;
  for (const auto& p : props) {
    names.push_back(p.name);
    const std::string at = where + "/properties/" + escape_pointer(p.name);
    expr v = as_rule(at, value(p.schema, at));
    members.push_back(
        sequence({literal(json(p.name).dump()), ws(), literal(":"), ws(), std::move(v)}));
  }
  if (n == 0 && !extra) return sequence({literal("{"), ws(), literal("}")});
  std::optional<expr> extra_member;
  if (extra) {
    const std::string at = where + "/additionalProperties";
    expr v = as_rule(at, value(*extra, at));
    extra_member = as_rule(
        at + "/member", sequence({json_key_not_in(names), ws(), literal(":"), ws(), std::move(v)}));
  }
  // first_k: no member written yet, properties k.. to come; after_k: some member written.
  expr after = extra ? repeat(sequence({separator(','), *extra_member}), 0, -1) : empty();
  expr first = extra ? sequence({*extra_member, after}) : alternation({});
  after = as_rule(where + "/after" + std::to_string(n), std::move(after));
  first = as_rule(where + "/first" + std::to_string(n), std::move(first));
  for (size_t k = n; k-- > 0;) {
    expr with = sequence({separator(','), members[k], after});
    expr next_after = props[k].required ? std::move(with) : alternation({std::move(with), after});
    expr starts = sequence({members[k], after});
    expr next_first =
        props[k].required ? std::move(starts) : alternation({std::move(starts), first});
    after = as_rule(where + "/after" + std::to_string(k), std::move(next_after));
    first = as_rule(where + "/first" + std::to_string(k), std::move(next_first));
  }
  expr body = sequence({std::move(first), ws()});
  return sequence({literal("{"), ws(),
                   required.empty() ? optional(std::move(body)) : std::move(body), literal("}")});
}

expr json_schema_converter::array_value(const json& s, const std::string& where) {
  std::vector<json> prefix;
  std::optional<json> items;  // nullopt: no items after the prefix
  const char* prefix_key = "prefixItems";
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) fail(where, "prefixItems must be an array");
    for (const auto& p : s["prefixItems"]) prefix.push_back(p);
    if (s.contains("items") && s["items"] != false) items = s["items"];
  } else if (s.contains("items") && s["items"].is_array()) {  // draft 4-7 tuples
    prefix_key = "items";
    for (const auto& p : s["items"]) prefix.push_back(p);
    if (s.contains("additionalItems") && s["additionalItems"] != false)
      items = s["additionalItems"];
  } else if (s.contains("items")) {
    if (s["items"] != false) items = s["items"];
  } else {
    items = json(true);
  }
  const int64_t min = count(s, "minItems", 0, where);
  int64_t max = count(s, "maxItems", -1, where);
  if (max >= 0 && max <= static_cast<int64_t>(prefix.size())) {  // maxItems cuts the prefix
    prefix.resize(static_cast<size_t>(max));
    items.reset();
  }
  const int64_t p = static_cast<int64_t>(prefix.size());
  if (!items) max = p;
  if (max >= 0 && max < min)
    fail(where, "minItems above what maxItems, prefixItems and items allow");
  if (max == 0) return sequence({literal("["), ws(), literal("]")});

  std::vector<expr> elements;
  for (int64_t i = 0; i < p; ++i) {
    const std::string at = where + "/" + prefix_key + "/" + std::to_string(i);
    elements.push_back(as_rule(at, value(prefix[i], at)));
  }
  std::optional<expr> item;
  if (items) {
    const std::string at =
        where + (prefix_key == std::string("items") ? "/additionalItems" : "/items");
    item = as_rule(at, value(*items, at));
  }
  // rest(i): the elements after the first i, each after a comma.
  expr rest = empty();
  if (items) {
    rest = repeat(sequence({separator(','), *item}),
                  int32_t(std::max<int64_t>(min - std::max<int64_t>(p, 1), 0)),
                  max < 0 ? -1 : int32_t(max - std::max<int64_t>(p, 1)));
  }
  // Each level of the tail is a rule of its own: a long tuple nested as one expression made the
  // later passes quadratic in its length (24,000 prefixItems took 44 s), a chain of rules keeps
  // them linear.
  for (int64_t i = p - 1; i >= 1; --i) {
    expr x = sequence({separator(','), elements[i], std::move(rest)});
    rest = as_rule(where + "/" + prefix_key + "-tail/" + std::to_string(i),
                   i >= min ? optional(std::move(x)) : std::move(x));
  }
  expr first_element = p > 0 ? elements[0] : *item;
  expr list = sequence({std::move(first_element), std::move(rest), ws()});
  return sequence(
      {literal("["), ws(), min == 0 ? optional(std::move(list)) : std::move(list), literal("]")});
}

}  // namespace actorllm::grammar
