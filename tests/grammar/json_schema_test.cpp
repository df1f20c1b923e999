// JSON Schema: for each keyword, texts that are valid against the schema are matched and
// invalid ones are not; keywords that are not enforced are refused by name and place.
#include <gtest/gtest.h>

#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

using testing::matches;
using testing::schema;

struct schema_case {
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

void check(const char* s, const schema_case& c, bool strict = true) {
  auto g = schema(s, strict);
  for (const auto& t : c.accepted) EXPECT_TRUE(matches(g, t)) << s << "\nshould match: " << t;
  for (const auto& t : c.rejected) EXPECT_FALSE(matches(g, t)) << s << "\nshould not match: " << t;
}

TEST(json_schema, primitive_types) {
  check(R"({"type": "null"})", {{"null"}, {"nul", "0", "\"null\""}});
  check(R"({"type": "boolean"})", {{"true", "false"}, {"True", "1"}});
  check(R"({"type": "integer"})", {{"0", "-7", "1234567890123"}, {"01", "-0", "1.0", "+1", "1e3"}});
  check(R"({"type": "number"})",
        {{"0", "-0.5", "3.25e-7", "1E+10", "12"}, {".5", "1.", "01", "1e", "--1"}});
  check(R"({"type": "string"})", {{R"("")", R"("héllo \"x\" \\ \n \u00e9 \/")"},
                                  {R"("a)", "\"a\nb\"", R"("\x")", R"("\ud800")", R"("\u12")"}});
}

TEST(json_schema, type_lists_and_inference) {
  check(R"({"type": ["string", "null"]})", {{R"("a")", "null"}, {"1"}});
  check(R"({"minLength": 2})", {{R"("ab")"}, {R"("a")"}});  // string keywords imply a string
  check(R"({})", {{R"({"a":[1,{"b":null}]})", "1", R"("x")"}, {"{", "[1,]", R"({"a": 1})"}});
}

TEST(json_schema, enum_and_const) {
  check(R"({"enum": ["red", 3, null, {"a": 1}]})",
        {{R"("red")", "3", "null", R"({"a":1})"}, {R"("blue")", "4", R"({"a": 1})"}});
  check(R"({"const": "fixed"})", {{R"("fixed")"}, {R"("other")"}});
}

TEST(json_schema, properties_required_and_order) {
  const char* s = R"({"type": "object", "properties": {"b": {"type": "integer"},
                      "a": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["a"]})";
  check(s, {{R"({"a":"x"})", R"({"b":1,"a":"x"})", R"({"b":1,"a":"x","c":true})",
             R"({"a":"x","c":false})"},
            {"{}", R"({"b":1})", R"({"a":"x","b":1})", R"({"a":"x",})", R"({,"a":"x"})",
             R"({"a":"x","d":1})", R"({"a":1})"}});
  check(R"({"type": "object", "properties": {"x": {"type": "integer"}}})",
        {{"{}", R"({"x":1})"}, {R"({"x":1,})", R"({"y":1})"}});
}

TEST(json_schema, additional_properties) {
  const char* open = R"({"type": "object", "properties": {"id": {"type": "integer"}},
                         "additionalProperties": {"type": "string"}})";
  check(open, {{R"({"id":1,"name":"x","k":"v"})", R"({"name":"x"})", "{}", R"({"ids":"x"})",
                R"({"i":"x"})"},
               {R"({"name":1})", R"({"id":1,"id":"x"})", R"({"id":"x"})"}});
  check(R"({"type": "object", "additionalProperties": true})",
        {{R"({"a":[1,2],"b":{"c":null}})", "{}"}, {R"({"a"})"}});
  check(R"({"type": "object", "properties": {"a": {"const": 1}}, "additionalProperties": false})",
        {{R"({"a":1})", "{}"}, {R"({"b":1})"}});
}

TEST(json_schema, strict_has_no_whitespace_and_the_default_allows_some) {
  const char* s = R"({"type": "object", "properties": {"a": {"type": "array", "items":
                      {"type": "integer"}}}, "required": ["a"]})";
  check(s, {{R"({"a":[1,2]})"}, {R"({"a": [1, 2]})", R"({ "a":[1,2]})"}}, true);
  check(s,
        {{R"({"a":[1,2]})", R"({"a": [1, 2]})", "{\n  \"a\": [\n    1,\n    2\n  ]\n}"},
         {"{\"a\":[1,2]}\n", R"({"a":  [1,2]})", "{\n" + std::string(21, ' ') + "\"a\":[1]}"}},
        false);
}

TEST(json_schema, arrays) {
  check(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
        {{"[1]", "[1,2,3]"}, {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"}});
  check(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})",
        {{"[]", R"(["a"])", R"(["a",1])"}, {R"(["a",1,2])", "[1]"}});
  check(R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "null"},
            "minItems": 2})",
        {{R"(["a",null])", R"(["a",null,null])"}, {R"(["a"])", R"(["a",1])"}});
  check(R"({"type": "array", "items": [{"const": 1}], "additionalItems": false})",
        {{"[]", "[1]"}, {"[1,1]"}});
  check(R"({"type": "array", "prefixItems": [{"const": 1}, {"const": 2}], "maxItems": 1})",
        {{"[]", "[1]"}, {"[1,2]"}});
  check(R"({"type": "array"})", {{"[]", R"([1,"a",[null]])"}, {"[1,]"}});
}

TEST(json_schema, string_lengths_count_characters) {
  check(R"({"type": "string", "minLength": 2, "maxLength": 3})",
        {{R"("ab")", R"("abc")", R"("éé")", R"("\n\u00e9x")"}, {R"("a")", R"("abcd")", R"("é")"}});
}

TEST(json_schema, pattern_inside_the_json_string) {
  check(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d+$"})",
        {{R"("AB-12")"}, {R"("ab-12")", R"("AB-")", R"("AB-12x")"}});
  check(R"({"type": "string", "pattern": "a\"b\\\\"})", {{R"("a\"b\\")"}, {R"("a"b\")"}});
}

TEST(json_schema, formats) {
  check(R"({"type": "string", "format": "date"})",
        {{R"("2024-02-29")", R"("2023-12-31")", R"("2000-02-29")", R"("0001-01-01")"},
         {R"("2023-02-29")", R"("1900-02-29")", R"("2023-04-31")", R"("2023-13-01")",
          R"("0000-01-01")", R"("2023-1-01")"}});
  check(R"({"type": "string", "format": "time"})",
        {{R"("23:59:59Z")", R"("00:00:00.123+05:30")"}, {R"("24:00:00Z")", R"("12:00:00")"}});
  check(R"({"type": "string", "format": "date-time"})",
        {{R"("2024-01-02T03:04:05Z")"}, {R"("2024-01-02 03:04:05Z")"}});
  check(R"({"type": "string", "format": "email"})",
        {{R"("a.b+c@example.co.uk")"}, {R"("a@b")", R"("@example.com")", R"("a b@c.de")"}});
  check(R"({"type": "string", "format": "uuid"})",
        {{R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123e4567e89b12d3a456426614174000")"}});
  check(R"({"type": "string", "format": "ipv4"})",
        {{R"("192.168.0.1")", R"("0.0.0.0")", R"("255.255.255.255")"},
         {R"("256.1.1.1")", R"("01.1.1.1")", R"("1.1.1")"}});
}

TEST(json_schema, integer_bounds) {
  check(R"({"type": "integer", "minimum": -12, "maximum": 105})",
        {{"-12", "-1", "0", "9", "10", "99", "105"}, {"-13", "106", "1000", "-100"}});
  check(R"({"type": "integer", "exclusiveMinimum": 0})", {{"1", "123456789"}, {"0", "-1"}});
  check(R"({"type": "integer", "minimum": 5, "exclusiveMaximum": 7.5})", {{"5", "7"}, {"4", "8"}});
  check(R"({"type": "integer", "maximum": -20})", {{"-20", "-1000"}, {"-19", "0", "5"}});
  check(R"({"type": "number", "minimum": 0})", {{"0", "1.5"}, {"-1"}});
}

TEST(json_schema, integer_ranges_are_exact) {
  // Every integer in [-300, 300] against several ranges.
  for (auto [lo, hi] :
       std::vector<std::pair<int, int>>{{-120, 37}, {0, 0}, {7, 199}, {-99, -10}, {100, 100}}) {
    std::string s = R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" +
                    std::to_string(hi) + "}";
    auto g = schema(s);
    for (int v = -300; v <= 300; ++v)
      EXPECT_EQ(matches(g, std::to_string(v)), lo <= v && v <= hi) << s << " value " << v;
  }
}

// multipleOf on integers, as Pydantic's multiple_of writes it: every integer in [-300, 300]
// against divisors alone, with minimum 0, and between two bounds.
TEST(json_schema, integer_multiples_are_exact) {
  for (int k : {1, 2, 3, 7, 10, 12}) {
    const std::string k_text = std::to_string(k);
    const std::string any = R"({"type": "integer", "multipleOf": )" + k_text + "}";
    const std::string nonnegative =
        R"({"type": "integer", "minimum": 0, "multipleOf": )" + k_text + "}";
    const std::string positive =
        R"({"type": "integer", "exclusiveMinimum": 0, "multipleOf": )" + k_text + "}";
    const std::string between =
        R"({"type": "integer", "minimum": -45, "maximum": 130, "multipleOf": )" + k_text + "}";
    auto g_any = schema(any.c_str()), g_nonnegative = schema(nonnegative.c_str()),
         g_positive = schema(positive.c_str()), g_between = schema(between.c_str());
    for (int v = -300; v <= 300; ++v) {
      const std::string text = std::to_string(v);
      const bool divides = v % k == 0;
      EXPECT_EQ(matches(g_any, text), divides) << any << " value " << v;
      EXPECT_EQ(matches(g_nonnegative, text), divides && v >= 0) << nonnegative << " value " << v;
      EXPECT_EQ(matches(g_positive, text), divides && v > 0) << positive << " value " << v;
      EXPECT_EQ(matches(g_between, text), divides && v >= -45 && v <= 130) << between << " " << v;
    }
    EXPECT_EQ(matches(g_any, "123456789012"), 123456789012LL % k == 0) << any;
    EXPECT_FALSE(matches(g_any, "012")) << any;  // no leading zeros
  }
}

TEST(json_schema, refs_and_recursion) {
  const char* s = R"({"$defs": {"list": {"type": "object", "properties": {"v": {"type": "integer"},
                      "next": {"anyOf": [{"$ref": "#/$defs/list"}, {"type": "null"}]}},
                      "required": ["v", "next"]}}, "$ref": "#/$defs/list"})";
  check(s, {{R"({"v":1,"next":null})", R"({"v":1,"next":{"v":2,"next":{"v":3,"next":null}}})"},
            {R"({"v":1})", R"({"v":1,"next":{"v":2}})"}});
  check(R"({"definitions": {"a/b": {"type": "integer"}}, "type": "array",
            "items": {"$ref": "#/definitions/a~1b"}})",
        {{"[1,2]"}, {R"(["x"])"}});
  check(R"({"type": "object", "properties": {"self": {"$ref": "#"}}})",
        {{"{}", R"({"self":{"self":{}}})"}, {R"({"self":1})"}});
}

TEST(json_schema, any_of_one_of_all_of) {
  check(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})",
        {{"1", R"("a")"}, {R"("ab")", "null"}});
  check(
      R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                       "required": ["kind", "x"]},
                      {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}},
                       "required": ["kind", "y"]}]})",
      {{R"({"kind":"a","x":1})", R"({"kind":"b","y":"s"})"}, {R"({"kind":"a","y":"s"})"}});
  check(
      R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                      {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})",
      {{R"({"a":1,"b":"x"})"}, {R"({"a":1})", R"({"b":"x"})"}});
  check(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})",
        {{R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"}, {"{}"}});
  check(
      R"({"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"n": {"minimum": 3, "type": "integer"}}}],
            "$defs": {"base": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}},
                               "required": ["n"], "additionalProperties": false}}})",
      {{R"({"n":3})", R"({"n":5})"}, {R"({"n":2})", R"({"n":6})"}});
}

TEST(json_schema, annotations_are_ignored) {
  check(R"({"title": "T", "description": "d", "default": 1, "examples": [1], "$schema": "x",
            "type": "integer", "x-custom": true})",
        {{"1"}, {"a"}});
}

void expect_schema_error(const char* s, const char* fragment) {
  try {
    schema(s);
    ADD_FAILURE() << "no error for " << s;
  } catch (const grammar_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(json_schema, refuses_what_it_does_not_enforce_by_name_and_place) {
  expect_schema_error(R"({"not": {"type": "null"}})", "at /: 'not' is not enforced");
  expect_schema_error(R"({"properties": {"a": {"type": "number", "multipleOf": 2}}})",
                      "at /properties/a: 'multipleOf' is enforced on integers only");
  expect_schema_error(R"({"type": "integer", "multipleOf": 0.5})", "a whole number in 1..1000");
  expect_schema_error(
      R"({"type": "integer", "multipleOf": 3, "minimum": -100000, "maximum": 100000})",
      "spanning more than 4096 multiples");
  expect_schema_error(R"({"type": "array", "uniqueItems": true})", "'uniqueItems' is not enforced");
  expect_schema_error(R"({"type": "string", "format": "uri"})", "format 'uri' is not enforced");
  expect_schema_error(R"({"type": "number", "minimum": 3, "maximum": 2})",
                      "no number lies within the bounds");
  expect_schema_error(R"({"$ref": "http://example.com/s.json"})",
                      "$ref 'http://example.com/s.json' is not supported");
  expect_schema_error(R"({"$ref": "#/$defs/missing"})", "points at nothing");
  expect_schema_error(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})",
                      "oneOf branches 0 and 1 may both match");
  expect_schema_error(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})",
                      "types do not intersect");
  expect_schema_error(R"({"type": "strin"})", "unknown type 'strin'");
  expect_schema_error(R"j({"type": "string", "pattern": "a(?=b)"})j",
                      "at /pattern: regex: at offset 1: lookaround is not supported");
  expect_schema_error(R"({"type": "object", "required": ["x"], "additionalProperties": false})",
                      "required property 'x' is forbidden");
  expect_schema_error(R"({"type": "object", "minProperties": 1})", "minProperties");
  expect_schema_error(R"({"type": "array", "minItems": 3, "maxItems": 2})", "minItems above");
  expect_schema_error(R"({"type": "string", "minLength": -1})",
                      "minLength must be a non-negative integer");
  expect_schema_error(R"(false)", "the schema false matches nothing");
  expect_schema_error(R"({"type": "object", "patternProperties": {"a": {}}})",
                      "'patternProperties' is not enforced");
  expect_schema_error(R"({"if": {}, "then": {}})", "'if' is not enforced");
  expect_schema_error(R"([1, 2])", "a schema must be an object or a boolean");
  expect_schema_error(R"({"type": "object", "properties": {"a": )", "not valid JSON");
}

TEST(json_schema, deep_and_wide_schemas) {
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += R"({"type": "array", "items": )";
  deep += "{}" + std::string(1000, '}');
  expect_schema_error(deep.c_str(), "nested deeper than 128 levels");
  // 3000 optional properties: compiles, and any one of them alone matches.
  std::string wide = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 3000; ++i)
    wide.append(i ? ",\"p" : "\"p").append(std::to_string(i)).append(R"(": {"type": "integer"})");
  wide += "}}";
  auto g = schema(wide);
  EXPECT_TRUE(matches(g, R"({"p2999":1})"));
  EXPECT_TRUE(matches(g, R"({"p7":1,"p2999":2})"));
  EXPECT_FALSE(matches(g, R"({"p2999":1,"p7":2})"));  // the schema's order
}

TEST(json_schema, any_json_object) {
  auto g = compile_json_object({}, testing::byte_vocabulary());
  EXPECT_TRUE(matches(g, R"({"a": [1, {"b": "c"}], "d": -1.5e3})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(matches(g, "[]"));
  EXPECT_FALSE(matches(g, R"({"a": })"));
}

}  // namespace
}  // namespace actorllm::grammar
