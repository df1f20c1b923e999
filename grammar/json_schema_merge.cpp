#include "grammar/json_schema_merge.hpp"

#include <algorithm>
#include <set>

#include "grammar/grammar_error.hpp"

namespace actorllm::grammar {
namespace {

const std::set<std::string> annotations = {"title",    "description", "default",  "examples",
                                           "$schema",  "$id",         "$comment", "deprecated",
                                           "readOnly", "writeOnly",   "$defs",    "definitions"};

std::vector<std::string> listed_types(const schema_json& s) {
  std::vector<std::string> out;
  const auto& t = s.at("type");
  if (t.is_string())
    out.push_back(t.get<std::string>());
  else
    for (const auto& x : t) out.push_back(x.get<std::string>());
  if (std::count(out.begin(), out.end(), "number") &&
      !std::count(out.begin(), out.end(), "integer"))
    out.push_back("integer");
  std::sort(out.begin(), out.end());
  return out;
}

std::string value_type(const schema_json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  return "number";
}

// The values a schema allows when it lists them (const or enum), else nullptr.
const schema_json* listed_values(const schema_json& s, schema_json& storage) {
  if (!s.is_object()) return nullptr;
  if (s.contains("const")) {
    storage = schema_json::array({s["const"]});
    return &storage;
  }
  if (s.contains("enum") && s["enum"].is_array()) return &s["enum"];
  return nullptr;
}

bool values_disjoint(const schema_json& a, const schema_json& b) {
  schema_json sa, sb;
  const schema_json* va = listed_values(a, sa);
  const schema_json* vb = listed_values(b, sb);
  if (!va || !vb) return false;
  for (const auto& x : *va)
    for (const auto& y : *vb)
      if (x == y) return false;
  return true;
}

bool is_required(const schema_json& s, const std::string& name) {
  if (!s.contains("required") || !s["required"].is_array()) return false;
  for (const auto& r : s["required"])
    if (r == name) return true;
  return false;
}

bool declares(const schema_json& s, const std::string& name) {
  return s.contains("properties") && s["properties"].is_object() && s["properties"].contains(name);
}

bool closed(const schema_json& s) {
  return s.contains("additionalProperties") && s["additionalProperties"] == false;
}

// Properties of `s` another schema forbids with additionalProperties false leave it.
void drop_undeclared(schema_json& props, const schema_json& closed_schema) {
  for (auto it = props.begin(); it != props.end();) {
    if (!declares(closed_schema, it.key()))
      it = props.erase(it);
    else
      ++it;
  }
}

}  // namespace

std::vector<std::string> schema_types(const schema_json& s) {
  static const std::vector<std::string> all = {"array",  "boolean", "integer", "null",
                                               "number", "object",  "string"};
  if (!s.is_object()) return all;
  if (s.contains("type")) return listed_types(s);
  schema_json storage;
  if (const schema_json* values = listed_values(s, storage)) {
    std::vector<std::string> out;
    for (const auto& v : *values) out.push_back(value_type(v));
    if (std::count(out.begin(), out.end(), "integer")) out.push_back("number");
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  return all;
}

bool provably_disjoint(const schema_json& a, const schema_json& b) {
  auto ta = schema_types(a), tb = schema_types(b);
  std::vector<std::string> both;
  std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::back_inserter(both));
  if (both.empty()) return true;
  if (values_disjoint(a, b)) return true;
  if (!a.is_object() || !b.is_object()) return false;
  if (a.contains("properties") && b.contains("properties") && a["properties"].is_object()) {
    for (const auto& [name, pa] : a["properties"].items()) {
      if (!declares(b, name) || !is_required(a, name) || !is_required(b, name)) continue;
      if (values_disjoint(pa, b["properties"][name])) return true;
    }
  }
  auto requires_undeclared = [](const schema_json& x, const schema_json& closed_one) {
    if (!closed(closed_one) || !x.contains("required")) return false;
    for (const auto& r : x["required"])
      if (r.is_string() && !declares(closed_one, r.get<std::string>())) return true;
    return false;
  };
  return requires_undeclared(a, b) || requires_undeclared(b, a);
}

schema_json merge_schemas(const schema_json& a, const schema_json& b, const std::string& where) {
  auto fail = [&](const std::string& what) -> schema_json {
    throw grammar_error("json schema: at " + where + ": allOf: " + what);
  };
  if (a.is_boolean() || b.is_boolean()) {
    if (a == false || b == false) fail("a branch is the schema false");
    return a.is_boolean() ? b : a;
  }
  schema_json out = a;
  for (const auto& [key, vb] : b.items()) {
    if (!out.contains(key)) {
      out[key] = vb;
      continue;
    }
    schema_json& va = out[key];
    if (va == vb || annotations.count(key)) continue;
    if (key == "type") {
      auto ta = listed_types(a), tb = listed_types(b);
      schema_json both = schema_json::array();
      for (const auto& t : ta)
        if (std::count(tb.begin(), tb.end(), t)) both.push_back(t);
      // number ∩ integer leaves integer; drop the implied integer next to a kept number.
      if (std::count(both.begin(), both.end(), "number")) {
        schema_json kept = schema_json::array();
        for (const auto& t : both)
          if (t != "integer") kept.push_back(t);
        both = kept;
      }
      if (both.empty()) fail("the branches' types do not intersect");
      va = both.size() == 1 ? both[0] : both;
    } else if (key == "properties") {
      for (const auto& [name, pb] : vb.items()) {
        if (!va.contains(name))
          va[name] = pb;
        else if (va[name] != pb)
          va[name] = schema_json{{"allOf", {va[name], pb}}};
      }
    } else if (key == "required") {
      for (const auto& r : vb)
        if (std::find(va.begin(), va.end(), r) == va.end()) va.push_back(r);
    } else if (key == "additionalProperties") {
      if (va == false || vb == false)
        va = false;
      else if (va == true)
        va = vb;
      else if (vb != true)
        va = schema_json{{"allOf", {va, vb}}};
    } else if (key == "items") {
      va = schema_json{{"allOf", {va, vb}}};
    } else if (key == "minLength" || key == "minItems" || key == "minimum" ||
               key == "exclusiveMinimum" || key == "minProperties") {
      if (!va.is_number() || !vb.is_number()) fail("cannot combine '" + key + "'");
      if (vb.get<double>() > va.get<double>()) va = vb;
    } else if (key == "maxLength" || key == "maxItems" || key == "maximum" ||
               key == "exclusiveMaximum" || key == "maxProperties") {
      if (!va.is_number() || !vb.is_number()) fail("cannot combine '" + key + "'");
      if (vb.get<double>() < va.get<double>()) va = vb;
    } else if (key == "enum") {
      schema_json both = schema_json::array();
      for (const auto& x : va)
        if (std::find(vb.begin(), vb.end(), x) != vb.end()) both.push_back(x);
      if (both.empty()) fail("the branches' enums do not intersect");
      va = both;
    } else {
      fail("cannot combine two different '" + key + "'");
    }
  }
  // A branch closed with additionalProperties false forbids the other's extra properties.
  if (out.contains("properties")) {
    if (closed(a)) drop_undeclared(out["properties"], a);
    if (closed(b)) drop_undeclared(out["properties"], b);
  }
  if (out.contains("required") && closed(out)) {
    for (const auto& r : out["required"])
      if (r.is_string() && !declares(out, r.get<std::string>()))
        fail("property '" + r.get<std::string>() +
             "' is required by one branch and forbidden by another");
  }
  return out;
}

}  // namespace actorllm::grammar
