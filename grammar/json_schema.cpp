#include "grammar/json_schema.hpp"

#include <cctype>
#include <cmath>
#include <set>
#include <unordered_map>

#include "grammar/grammar_error.hpp"
#include "grammar/json_primitives.hpp"
#include "grammar/json_schema_converter.hpp"
#include "grammar/json_schema_merge.hpp"
#include "grammar/regex_parser.hpp"

namespace actorllm::grammar {
namespace {

// Keywords that constrain values but are not enforced: refused rather than ignored.
const std::set<std::string> refused_keywords = {"not",
                                                "if",
                                                "then",
                                                "else",
                                                "patternProperties",
                                                "propertyNames",
                                                "dependentRequired",
                                                "dependentSchemas",
                                                "dependencies",
                                                "contains",
                                                "minContains",
                                                "maxContains",
                                                "$dynamicRef",
                                                "$recursiveRef"};
// Keywords that say nothing about the value.
const std::set<std::string> annotation_keywords = {"title",
                                                   "description",
                                                   "default",
                                                   "examples",
                                                   "$schema",
                                                   "$id",
                                                   "$comment",
                                                   "deprecated",
                                                   "readOnly",
                                                   "writeOnly",
                                                   "$defs",
                                                   "definitions",
                                                   "$anchor",
                                                   "$dynamicAnchor",
                                                   "unevaluatedProperties",
                                                   "unevaluatedItems",
                                                   "contentEncoding",
                                                   "contentMediaType",
                                                   "nullable",
                                                   "discriminator",
                                                   "$vocabulary"};

}  // namespace

const std::vector<std::string> object_keywords = {"properties", "required", "additionalProperties",
                                                  "minProperties", "maxProperties"};
const std::vector<std::string> array_keywords = {"items",    "prefixItems", "additionalItems",
                                                 "minItems", "maxItems",    "uniqueItems"};
const std::vector<std::string> string_keywords = {"minLength", "maxLength", "pattern", "format"};
const std::vector<std::string> number_keywords = {"minimum", "maximum", "exclusiveMinimum",
                                                  "exclusiveMaximum"};

bool has_any(const schema_json& s, const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (s.contains(k)) return true;
  return false;
}

// `s` without `drop` and without annotations.
schema_json assertions_of(const schema_json& s, std::initializer_list<const char*> drop) {
  schema_json out = schema_json::object();
  for (const auto& [k, v] : s.items()) {
    if (annotation_keywords.count(k)) continue;
    bool dropped = false;
    for (const char* d : drop) dropped |= k == d;
    if (!dropped) out[k] = v;
  }
  return out;
}

using json = schema_json;

json_schema_converter::json_schema_converter(const json& root, const json_schema_options& options)
    : root_(root), options_(options) {}

grammar_ir json_schema_converter::schema() {
  ir_.root = ir_.rule_index("root");
  expr body = value(root_, "");
  ir_.rules[ir_.root].body = std::move(body);
  return std::move(ir_);
}

grammar_ir json_schema_converter::any_object() {
  ir_.root = ir_.rule_index("root");
  any_value();
  ir_.rules[ir_.root].body = rule_ref(any_object_);
  return std::move(ir_);
}

void json_schema_converter::fail(const std::string& where, const std::string& what) const {
  throw grammar_error("json schema: at " + (where.empty() ? std::string("/") : where) + ": " +
                      what);
}

int32_t json_schema_converter::new_rule(const std::string& base) {
  std::string name = base.empty() ? "schema" : base;
  for (int i = 2; ir_.find_rule(name) >= 0; ++i) name = base + "#" + std::to_string(i);
  return ir_.rule_index(name);
}

expr json_schema_converter::as_rule(const std::string& name, expr body, bool shared) {
  int32_t r = new_rule(name);
  ir_.rules[r].body = std::move(body);
  ir_.rules[r].shared = shared;
  return rule_ref(r);
}

// Strings are shared rules: their states accept most of a vocabulary, so each is worth
// one token cache for all its uses (identical ones merge, grammar_ir.hpp).
expr json_schema_converter::string_rule(const std::string& where, expr body) {
  return as_rule(where + "/string", sequence({literal("\""), std::move(body), literal("\"")}),
                 true);
}

expr json_schema_converter::ws() {
  if (options_.strict) return empty();
  if (ws_rule_ < 0) {
    expr indent = repeat(alternation({literal(" "), literal("\t")}), 0, options_.max_indent);
    ws_rule_ = new_rule("ws");
    ir_.rules[ws_rule_].body =
        optional(alternation({literal(" "), sequence({literal("\n"), std::move(indent)})}));
  }
  return rule_ref(ws_rule_);
}

expr json_schema_converter::separator(char c) {
  return sequence({ws(), literal(std::string(1, c)), ws()});
}

expr json_schema_converter::string_char() {
  if (char_rule_ < 0) {
    char_rule_ = new_rule("json_char");
    ir_.rules[char_rule_].body = json_string_char();
  }
  return rule_ref(char_rule_);
}

expr json_schema_converter::any_value() {
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
    ir_.rules[array].body =
        sequence({literal("["), ws(),
                  optional(sequence(
                      {rule_ref(any_value_),
                       repeat(sequence({separator(','), rule_ref(any_value_)}), 0, -1), ws()})),
                  literal("]")});
  }
  return rule_ref(any_value_);
}

const json& json_schema_converter::resolve(const std::string& ref, const std::string& where) {
  if (ref == "#") return root_;
  if (ref.rfind("#/", 0) != 0)
    fail(where,
         "$ref '" + ref + "' is not supported (only '#' and JSON pointers into this schema)");
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

expr json_schema_converter::ref(const json& target, const std::string& where) {
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
json json_schema_converter::flatten(const json& s, const std::string& where, int depth) {
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
      merged = merge_schemas(
          merged, flatten(s["allOf"][i], where + "/allOf/" + std::to_string(i), depth + 1), where);
    return merged;
  }
  return s;
}

void json_schema_converter::check_keywords(const json& s, const std::string& where) {
  for (const auto& [k, v] : s.items()) {
    if (refused_keywords.count(k)) fail(where, "'" + k + "' is not enforced");
    if (k == "multipleOf" && !(s.contains("type") && s["type"] == "integer"))
      fail(where, "'multipleOf' is enforced on integers only (\"type\": \"integer\")");
    if (k == "uniqueItems" && v == true &&
        !(s.contains("maxItems") && s["maxItems"].is_number() && s["maxItems"].get<double>() <= 1))
      fail(where, "'uniqueItems' is not enforced");
  }
}

expr json_schema_converter::value(const json& s, const std::string& where) {
  if (++depth_ > max_depth)
    fail(where, "schema nested deeper than " + std::to_string(max_depth) + " levels");
  struct leave {
    int& depth;
    ~leave() { --depth; }
  } guard{depth_};
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
    if (t.is_string())
      types.push_back(t.get<std::string>());
    else if (t.is_array())
      for (const auto& x : t) types.push_back(x.is_string() ? x.get<std::string>() : "");
    else
      fail(where, "type must be a string or an array of strings");
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

expr json_schema_converter::union_of(const json& s, const std::string& where) {
  if (s.contains("anyOf") && s.contains("oneOf"))
    fail(where, "anyOf together with oneOf is not enforced");
  const std::string key = s.contains("anyOf") ? "anyOf" : "oneOf";
  const json& list = s[key];
  if (!list.is_array() || list.empty()) fail(where, key + " must be a non-empty array");
  const json rest = assertions_of(s, {"anyOf", "oneOf"});
  std::vector<json> branches;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = where + "/" + key + "/" + std::to_string(i);
    branches.push_back(
        rest.empty() ? list[i] : merge_schemas(flatten(list[i], at), flatten(rest, where), at));
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

expr json_schema_converter::typed(const json& s, const std::string& type,
                                  const std::string& where) {
  if (type == "null") return literal("null");
  if (type == "boolean") return alternation({literal("true"), literal("false")});
  if (type == "string") return string_value(s, where);
  if (type == "integer") return integer_value(s, where);
  if (type == "number") return number_value(s, where);
  if (type == "object") return object_value(s, where);
  if (type == "array") return array_value(s, where);
  fail(where, "unknown type '" + type + "'");
}

grammar_ir json_schema_ir(const nlohmann::json& schema, const json_schema_options& options) {
  const json ordered = json::parse(schema.dump());
  return json_schema_converter(ordered, options).schema();
}

grammar_ir json_schema_ir(std::string_view schema_text, const json_schema_options& options) {
  json ordered;
  try {
    ordered = json::parse(schema_text);
  } catch (const json::parse_error& e) {
    throw grammar_error(std::string("json schema: not valid JSON: ") + e.what());
  }
  return json_schema_converter(ordered, options).schema();
}

grammar_ir json_object_ir(const json_schema_options& options) {
  const json none;
  return json_schema_converter(none, options).any_object();
}

}  // namespace actorllm::grammar
