#pragma once
// Internal to the JSON Schema converter (json_schema.cpp: schemas, references, combinators;
// json_schema_values.cpp: strings, numbers, objects, arrays). Builds one grammar_ir from a
// schema document, one rule per referenced definition and per property value.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_ir.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/json_schema_merge.hpp"
#include "grammar/number_range.hpp"

namespace actorllm::grammar {

class json_schema_converter {
 public:
  using json = schema_json;

  /// `root` must outlive the converter; $ref pointers resolve inside it.
  json_schema_converter(const json& root, const json_schema_options& options);
  grammar_ir schema();
  grammar_ir any_object();

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const;
  int32_t new_rule(const std::string& base);
  expr as_rule(const std::string& name, expr body, bool shared = false);
  // Strings are shared rules: their states accept most of a vocabulary, so each is worth
  // one token cache for all its uses (identical ones merge, grammar_ir.hpp).
  expr string_rule(const std::string& where, expr body);

  expr ws();
  expr separator(char c);
  expr string_char();

  expr any_value();

  const json& resolve(const std::string& ref, const std::string& where);
  expr ref(const json& target, const std::string& where);
  // A schema with its top-level $ref and allOf merged away.
  json flatten(const json& s, const std::string& where, int depth = 0);

  void check_keywords(const json& s, const std::string& where);
  expr value(const json& s, const std::string& where);
  expr union_of(const json& s, const std::string& where);
  expr typed(const json& s, const std::string& type, const std::string& where);
  // A non-negative integer keyword, or `fallback` when absent.
  int64_t count(const json& s, const char* key, int64_t fallback, const std::string& where);
  expr string_value(const json& s, const std::string& where);
  // An integer bound, or nullopt when absent; `lower` rounds up, else down.
  std::optional<int64_t> bound(const json& s, bool lower, const std::string& where);
  expr integer_value(const json& s, const std::string& where);
  // The integers divisible by `k` within [lo, hi] (multipleOf).
  expr integer_multiples(int64_t k, std::optional<int64_t> lo, std::optional<int64_t> hi,
                         const std::string& where);
  // A number bound as an exact decimal, or nullopt when absent.
  std::optional<number_bound> number_limit(const json& s, bool lower, const std::string& where);
  expr number_value(const json& s, const std::string& where);
  expr object_value(const json& s, const std::string& where);
  expr array_value(const json& s, const std::string& where);

  const json& root_;
  json_schema_options options_;
  grammar_ir ir_;
  std::unordered_map<std::string, int32_t> refs_;  // $ref → its rule
  int32_t ws_rule_ = -1, char_rule_ = -1, any_value_ = -1, any_object_ = -1;
  static constexpr int max_depth = 128;  // nested schemas; bounds the recursion
  // multipleOf: the largest divisor (one rule per remainder), and the most multiples written
  // out one by one between two bounds.
  static constexpr int64_t max_multiple = 1000;
  static constexpr int64_t max_listed_multiples = 4096;
  int depth_ = 0;
};

/// `s` without the keywords `drop` and without annotations.
schema_json assertions_of(const schema_json& s, std::initializer_list<const char*> drop);
/// True when `s` has one of `keys`.
bool has_any(const schema_json& s, const std::vector<std::string>& keys);
extern const std::vector<std::string> object_keywords, array_keywords, string_keywords,
    number_keywords;

}  // namespace actorllm::grammar
