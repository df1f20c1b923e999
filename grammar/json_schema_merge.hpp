#pragma once
/// Schema algebra the JSON Schema converter needs: allOf merged into one schema, and whether
/// two oneOf branches can both match. Schemas here have their $ref resolved by the caller.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace actorllm::grammar {

using schema_json = nlohmann::ordered_json;

/// Resolves a schema's "$ref" (leaving other schemas as they are); throws grammar_error.
using ref_resolver = std::function<const schema_json&(const schema_json&, const std::string&)>;

/// One schema equivalent to allOf [a, b] for the keywords that combine (object properties,
/// required, additionalProperties false, type, bounds, enum, const; equal values of any
/// other keyword). Throws grammar_error naming `where` and the keyword otherwise.
schema_json merge_schemas(const schema_json& a, const schema_json& b, const std::string& where);

/// The JSON types a schema's values can have, as a subset of
/// {null, boolean, object, array, string, integer, number} (integer ⊂ number: a schema of
/// type number also lists integer).
std::vector<std::string> schema_types(const schema_json& s);

/// True when no value can match both `a` and `b` by a simple proof: disjoint types, disjoint
/// enum/const values, a required property whose const/enum values differ, or
/// additionalProperties false against a property the other requires.
bool provably_disjoint(const schema_json& a, const schema_json& b);

}  // namespace actorllm::grammar
