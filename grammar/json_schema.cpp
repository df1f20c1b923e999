#include "grammar/json_schema.hpp"

#include <cctype>
#include <cmath>
#include <set>
#include <unordered_map>

#include "grammar/grammar_error.hpp"
#include "grammar/json_primitives.hpp"
#include "grammar/json_schema_merge.hpp"
#include "grammar/regex_parser.hpp"

namespace actorllm::grammar {
namespace {

using json = schema_json;

// Keywords that constrain values but are not enforced: refused rather than ignored.
const std::set<std::string> refused_keywords = {
    "not",           "if",           "then",        "else",           "patternProperties",
    "propertyNames", "dependentRequired", "dependentSchemas", "dependencies", "contains",
    "minContains",   "maxContains",  "multipleOf",  "$dynamicRef",    "$recursiveRef"};
// Keywords that say nothing about the value.
const std::set<std::string> annotation_keywords = {
    "title",      "description", "default",  "examples",     "$schema",   "$id",
    "$comment",   "deprecated",  "readOnly", "writeOnly",    "$defs",     "definitions",
    "$anchor",    "$dynamicAnchor", "unevaluatedProperties", "unevaluatedItems",
    "contentEncoding", "contentMediaType", "nullable", "discriminator", "$vocabulary"};

const std::vector<std::string> object_keywords = {"properties", "required", "additionalProperties",
                                                  "minProperties", "maxProperties"};
const std::vector<std::string> array_keywords = {"items", "prefixItems", "additionalItems",
                                                 "minItems", "maxItems", "uniqueItems"};
const std::vector<std::string> string_keywords = {"minLength", "maxLength", "pattern", "format"};
const std::vector<std::string> number_keywords = {"minimum", "maximum", "exclusiveMinimum",
                                                  "exclusiveMaximum"};

bool has_any(const json& s, const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (s.contains(k)) return true;
  return false;
}

// `s` without `drop` and without annotations.
json assertions_of(const json& s, std::initializer_list<const char*> drop) {
  json out = json::object();
  for (const auto& [k, v] : s.items()) {
    if (annotation_keywords.count(k)) continue;
    bool dropped = false;
    for (const char* d : drop) dropped |= k == d;
    if (!dropped) out[k] = v;
  }
  return out;
}

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

class converter {
 public:
  converter(const json& root, const json_schema_options& options)
      : root_(root), options_(options) {}

  grammar_ir schema() {
    ir_.root = ir_.rule_index("root");
    expr body = value(root_, "");
    ir_.rules[ir_.root].body = std::move(body);
    return std::move(ir_);
  }

  grammar_ir any_object() {
    ir_.root = ir_.rule_index("root");
    any_value();
    ir_.rules[ir_.root].body = rule_ref(any_object_);
    return std::move(ir_);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw grammar_error("json schema: at " + (where.empty() ? std::string("/") : where) + ": " +
                        what);
  }

  int32_t new_rule(const std::string& base) {
    std::string name = base.empty() ? "schema" : base;
    for (int i = 2; ir_.find_rule(name) >= 0; ++i) name = base + "#" + std::to_string(i);
    return ir_.rule_index(name);
  }
  expr as_rule(const std::string& name, expr body, bool shared = false) {
    int32_t r = new_rule(name);
    ir_.rules[r].body = std::move(body);
    ir_.rules[r].shared = shared;
    return rule_ref(r);
  }
  // Strings are shared rules: their states accept most of a vocabulary, so each is worth
  // one token cache for all its uses (identical ones merge, grammar_ir.hpp).
  expr string_rule(const std::string& where, expr body) {
    return as_rule(where + "/string", sequence({literal("\""), std::move(body), literal("\"")}), true);
  }

  // --- whitespace and punctuation -------------------------------------------------------
  expr ws() {
    if (options_.strict) return empty();
    if (ws_rule_ < 0) {
      expr indent = repeat(alternation({literal(" "), literal("\t")}), 0, options_.max_indent);
      ws_rule_ = new_rule("ws");
      ir_.rules[ws_rule_].body =
          optional(alternation({literal(" "), sequence({literal("\n"), std::move(indent)})}));
    }
    return rule_ref(ws_rule_);
  }
  expr separator(char c) { return sequence({ws(), literal(std::string(1, c)), ws()}); }
  expr string_char() {
    if (char_rule_ < 0) {
      char_rule_ = new_rule("json_char");
      ir_.rules[char_rule_].body = json_string_char();
    }
    return rule_ref(char_rule_);
  }

  // --- any JSON value -------------------------------------------------------------------
  expr any_value() {
    if (any_value_ < 0) {
      any_value_ = new_rule("json_value");
      any_object_ = new_rule("json_object");
      int32_t array = new_rule("json_array");
      expr string = string_rule("json", repeat(string_char(), 0, -1));
      ir_.rules[any_value_].body =
          alternation({rule_ref(any_object_), rule_ref(array), string, json_number(false),
                       literal("true"), literal("false"), literal("null")});
      expr member = sequence({string, ws(), literal(":"), ws(), rule_ref(any_value_)});
      ir_.rules[any_object_].body = sequence(
          {literal("{"), ws(),
           optional(sequence({member, repeat(sequence({separator(','), member}), 0, -1), ws()})),
           literal("}")});
      ir_.rules[array].body = sequence(
          {literal("["), ws(),
           optional(sequence({rule_ref(any_value_),
                               repeat(sequence({separator(','), rule_ref(any_value_)}), 0, -1),
                               ws()})),
           literal("]")});
    }
    return rule_ref(any_value_);
  }

  // --- $ref -----------------------------------------------------------------------------
  const json& resolve(const std::string& ref, const std::string& where) {
    if (ref == "#") return root_;
    if (ref.rfind("#/", 0) != 0)
      fail(where, "$ref '" + ref + "' is not supported (only '#' and JSON pointers into this schema)");
    std::string pointer;
    for (size_t i = 1; i < ref.size(); ++i) {  // percent-decoding
      if (ref[i] == '%' && i + 2 < ref.size() && isxdigit(ref[i + 1]) && isxdigit(ref[i + 2])) {
        pointer += static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        pointer += ref[i];
      }
    }
    try {
      return root_.at(json::json_pointer(pointer));
    } catch (const std::exception&) {
      fail(where, "$ref '" + ref + "' points at nothing in this schema");
    }
  }

  expr ref(const json& target, const std::string& where) {
    if (!target.is_string()) fail(where, "$ref must be a string");
    const std::string r = target.get<std::string>();
    if (auto it = refs_.find(r); it != refs_.end()) return rule_ref(it->second);
    const json& schema = resolve(r, where);
    int32_t rule = new_rule(r);
    refs_[r] = rule;
    expr body = value(schema, r.substr(1));
    ir_.rules[rule].body = std::move(body);
    return rule_ref(rule);
  }

  // A schema with its top-level $ref and allOf merged away.
  json flatten(const json& s, const std::string& where, int depth = 0) {
    if (depth > 32) fail(where, "allOf or $ref nested too deeply (a recursive $ref inside allOf?)");
    if (!s.is_object()) return s;
    if (s.contains("$ref")) {
      json target = flatten(resolve(s["$ref"].get<std::string>(), where), where, depth + 1);
      json rest = assertions_of(s, {"$ref"});
      return rest.empty() ? target : merge_schemas(target, flatten(rest, where, depth + 1), where);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array()) fail(where, "allOf must be an array");
      json merged = assertions_of(s, {"allOf"});
      for (size_t i = 0; i < s["allOf"].size(); ++i)
        merged = merge_schemas(merged, flatten(s["allOf"][i], where + "/allOf/" + std::to_string(i), depth + 1), where);
      return merged;
    }
    return s;
  }

  // --- schemas --------------------------------------------------------------------------
  void check_keywords(const json& s, const std::string& where) {
    for (const auto& [k, v] : s.items()) {
      if (refused_keywords.count(k)) fail(where, "'" + k + "' is not enforced");
      if (k == "uniqueItems" && v == true &&
          !(s.contains("maxItems") && s["maxItems"].is_number() && s["maxItems"].get<double>() <= 1))
        fail(where, "'uniqueItems' is not enforced");
    }
  }

  expr value(const json& s, const std::string& where) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return any_value();
      fail(where, "the schema false matches nothing");
    }
    if (!s.is_object()) fail(where, "a schema must be an object or a boolean");
    check_keywords(s, where);
    if (s.contains("$ref")) {
      if (assertions_of(s, {"$ref"}).empty()) return ref(s["$ref"], where);
      return value(flatten(s, where), where);
    }
    if (s.contains("allOf")) return value(flatten(s, where), where);
    if (s.contains("anyOf") || s.contains("oneOf")) return union_of(s, where);
    if (s.contains("const")) return literal(s["const"].dump());
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) fail(where, "enum must be a non-empty array");
      std::vector<expr> values;
      for (const auto& v : s["enum"]) values.push_back(literal(v.dump()));
      return alternation(std::move(values));
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s["type"];
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array())
        for (const auto& x : t) types.push_back(x.is_string() ? x.get<std::string>() : "");
      else fail(where, "type must be a string or an array of strings");
    } else {
      if (has_any(s, object_keywords)) types.push_back("object");
      if (has_any(s, array_keywords)) types.push_back("array");
      if (has_any(s, string_keywords)) types.push_back("string");
      if (has_any(s, number_keywords)) types.push_back("number");
      if (types.empty()) return any_value();
    }
    std::vector<expr> alternatives;
    for (const auto& t : types) alternatives.push_back(typed(s, t, where));
    return alternation(std::move(alternatives));
  }

  expr union_of(const json& s, const std::string& where) {
    if (s.contains("anyOf") && s.contains("oneOf")) fail(where, "anyOf together with oneOf is not enforced");
    const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
    const json& list = s[key];
    if (!list.is_array() || list.empty()) fail(where, key + " must be a non-empty array");
    const json rest = assertions_of(s, {"anyOf", "oneOf"});
    std::vector<json> branches;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = where + "/" + key + "/" + std::to_string(i);
      branches.push_back(rest.empty() ? list[i] : merge_schemas(flatten(list[i], at), flatten(rest, where), at));
    }
    if (key == "oneOf") {
      for (size_t i = 0; i < branches.size(); ++i)
        for (size_t j = i + 1; j < branches.size(); ++j)
          if (!provably_disjoint(flatten(branches[i], where), flatten(branches[j], where)))
            fail(where, "oneOf branches " + std::to_string(i) + " and " + std::to_string(j) +
                            " may both match (exclusivity is not enforced; use anyOf)");
    }
    std::vector<expr> alternatives;
    for (size_t i = 0; i < branches.size(); ++i)
      alternatives.push_back(value(branches[i], where + "/" + key + "/" + std::to_string(i)));
    return alternation(std::move(alternatives));
  }

  expr typed(const json& s, const std::string& type, const std::string& where) {
    if (type == "null") return literal("null");
    if (type == "boolean") return alternation({literal("true"), literal("false")});
    if (type == "string") return string_value(s, where);
    if (type == "integer") return integer_value(s, where);
    if (type == "number") return number_value(s, where);
    if (type == "object") return object_value(s, where);
    if (type == "array") return array_value(s, where);
    fail(where, "unknown type '" + type + "'");
  }

  // A non-negative integer keyword, or `fallback` when absent.
  int64_t count(const json& s, const char* key, int64_t fallback, const std::string& where) {
    if (!s.contains(key)) return fallback;
    const json& v = s[key];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() != std::floor(v.get<double>()))
      fail(where, std::string(key) + " must be a non-negative integer");
    if (v.get<double>() > 100000) fail(where, std::string(key) + " above 100000 is not enforced");
    return static_cast<int64_t>(v.get<double>());
  }

  expr string_value(const json& s, const std::string& where) {
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("format")) {
      if (lengths || s.contains("pattern"))
        fail(where, "format together with pattern, minLength or maxLength is not enforced");
      const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
      auto body = string_format(f);
      if (!body) fail(where, "format '" + f + "' is not enforced");
      return string_rule(where, std::move(*body));
    }
    if (s.contains("pattern")) {
      if (lengths) fail(where, "pattern together with minLength or maxLength is not enforced");
      if (!s["pattern"].is_string()) fail(where, "pattern must be a string");
      try {
        return string_rule(where, parse_regex(s["pattern"].get<std::string>(), regex_output::json_string));
      } catch (const grammar_error& e) {
        fail(where + "/pattern", e.what());
      }
    }
    const int64_t min = count(s, "minLength", 0, where), max = count(s, "maxLength", -1, where);
    if (max >= 0 && max < min) fail(where, "minLength above maxLength");
    return string_rule(where, repeat(string_char(), int32_t(min), int32_t(max)));
  }

  // An integer bound, or nullopt when absent; `lower` rounds up, else down.
  std::optional<int64_t> bound(const json& s, bool lower, const std::string& where) {
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

  expr integer_value(const json& s, const std::string& where) {
    return integer_range(bound(s, true, where), bound(s, false, where));
  }

  expr number_value(const json& s, const std::string& where) {
    if (!has_any(s, number_keywords)) return json_number(false);
    const bool nonnegative = s.contains("minimum") && s["minimum"] == 0 &&
                             !s.contains("maximum") && !s.contains("exclusiveMinimum") &&
                             !s.contains("exclusiveMaximum");
    if (!nonnegative)
      fail(where, "minimum, maximum and exclusive bounds on a number are not enforced (only "
                  "minimum 0, and any bounds on an integer)");
    return json_number(true);
  }

  expr object_value(const json& s, const std::string& where) {
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
          if (required.count(name)) fail(where, "required property '" + name + "' has the schema false");
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
      if (closed) fail(where, "required property '" + name + "' is forbidden by additionalProperties false");
      props.push_back({name, extra ? *extra : json(true), true});
    }
    const int64_t min_props = count(s, "minProperties", 0, where);
    if (min_props > static_cast<int64_t>(required.size()))
      fail(where, "minProperties above the number of required properties is not enforced");
    if (s.contains("maxProperties") && (extra || count(s, "maxProperties", 0, where) < int64_t(props.size())))
      fail(where, "maxProperties below the number of properties is not enforced");

    const size_t n = props.size();
    std::vector<std::string> names;
    std::vector<expr> members;
    for (const auto& p : props) {
      names.push_back(p.name);
      const std::string at = where + "/properties/" + escape_pointer(p.name);
      expr v = as_rule(at, value(p.schema, at));
      members.push_back(sequence({literal(json(p.name).dump()), ws(), literal(":"), ws(), std::move(v)}));
    }
    if (n == 0 && !extra) return sequence({literal("{"), ws(), literal("}")});
    std::optional<expr> extra_member;
    if (extra) {
      const std::string at = where + "/additionalProperties";
      expr v = as_rule(at, value(*extra, at));
      extra_member = as_rule(at + "/member", sequence({json_key_not_in(names), ws(), literal(":"), ws(), std::move(v)}));
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
      expr next_first = props[k].required ? std::move(starts) : alternation({std::move(starts), first});
      after = as_rule(where + "/after" + std::to_string(k), std::move(next_after));
      first = as_rule(where + "/first" + std::to_string(k), std::move(next_first));
    }
    expr body = sequence({std::move(first), ws()});
    return sequence({literal("{"), ws(), required.empty() ? optional(std::move(body)) : std::move(body),
                     literal("}")});
  }

  expr array_value(const json& s, const std::string& where) {
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
      if (s.contains("additionalItems") && s["additionalItems"] != false) items = s["additionalItems"];
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
    if (max >= 0 && max < min) fail(where, "minItems above what maxItems, prefixItems and items allow");
    if (max == 0) return sequence({literal("["), ws(), literal("]")});

    std::vector<expr> elements;
    for (int64_t i = 0; i < p; ++i) {
      const std::string at = where + "/" + prefix_key + "/" + std::to_string(i);
      elements.push_back(as_rule(at, value(prefix[i], at)));
    }
    std::optional<expr> item;
    if (items) {
      const std::string at = where + (prefix_key == std::string("items") ? "/additionalItems" : "/items");
      item = as_rule(at, value(*items, at));
    }
    // rest(i): the elements after the first i, each after a comma.
    expr rest = empty();
    if (items) {
      rest = repeat(sequence({separator(','), *item}), int32_t(std::max<int64_t>(min - std::max<int64_t>(p, 1), 0)),
                    max < 0 ? -1 : int32_t(max - std::max<int64_t>(p, 1)));
    }
    for (int64_t i = p - 1; i >= 1; --i) {
      expr x = sequence({separator(','), elements[i], std::move(rest)});
      rest = i >= min ? optional(std::move(x)) : std::move(x);
    }
    expr first_element = p > 0 ? elements[0] : *item;
    expr list = sequence({std::move(first_element), std::move(rest), ws()});
    return sequence({literal("["), ws(), min == 0 ? optional(std::move(list)) : std::move(list), literal("]")});
  }

  const json& root_;
  json_schema_options options_;
  grammar_ir ir_;
  std::unordered_map<std::string, int32_t> refs_;
  int32_t ws_rule_ = -1, char_rule_ = -1, any_value_ = -1, any_object_ = -1;
};

}  // namespace

grammar_ir json_schema_ir(const nlohmann::json& schema, const json_schema_options& options) {
  const json ordered = json::parse(schema.dump());
  return converter(ordered, options).schema();
}

grammar_ir json_schema_ir(std::string_view schema_text, const json_schema_options& options) {
  json ordered;
  try {
    ordered = json::parse(schema_text);
  } catch (const json::parse_error& e) {
    throw grammar_error(std::string("json schema: not valid JSON: ") + e.what());
  }
  return converter(ordered, options).schema();
}

grammar_ir json_object_ir(const json_schema_options& options) {
  const json none;
  return converter(none, options).any_object();
}

}  // namespace actorllm::grammar
