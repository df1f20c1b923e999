#pragma once
/// JSON Schema → grammar_ir: the JSON texts the model may write are exactly (a subset of)
/// those valid against the schema.
///
/// Enforced: type (all seven, and lists of types); properties, required, additionalProperties
/// (false, true, or a schema; when absent no other property is written); enum, const; anyOf,
/// oneOf (when its branches cannot overlap: different types, or objects told apart by a
/// const/enum property or by additionalProperties false), allOf (merged: objects, and the
/// keywords of other types where they combine); $ref to "#" and JSON pointers in the
/// document ($defs, definitions, ...), recursion included; items, prefixItems, minItems,
/// maxItems (items: false, and no extra items when only prefixItems is given); minLength,
/// maxLength, pattern (matched whole); format date, time, date-time, email, uuid, ipv4;
/// minLength / maxLength together with a pattern or a format (both hold; the automaton pairs
/// the regex's states with a character count, so a large maxLength over a complex regex can
/// pass the builder's state budget and is then refused as too large);
/// minimum, maximum, exclusiveMinimum, exclusiveMaximum for integers and for numbers (any
/// real bounds, read as exact decimals; a bounded number is written without an exponent,
/// number_range.hpp); multipleOf on integers. Properties come in the schema's order.
///
/// Ignored as annotations: title, description, default, examples, $schema, $id, $comment,
/// deprecated, readOnly, writeOnly, unevaluatedProperties/Items (nothing unevaluated is
/// written), and unknown keywords. Refused with a grammar_error naming the keyword and its
/// place ("json schema: at /properties/x: ..."): not, if/then/else, patternProperties,
/// propertyNames, dependentRequired, dependentSchemas, minProperties, maxProperties,
/// contains, uniqueItems true, multipleOf on numbers, bounds no number lies within, other
/// formats, a format together with a pattern, remote $ref, and combinations that cannot be
/// merged.
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

struct json_schema_options {
  /// OpenAI's strict mode: no whitespace between tokens at all. Otherwise each place JSON
  /// allows whitespace takes none, one space, or a newline and up to `max_indent` spaces
  /// or tabs (bounded, so a model cannot loop on whitespace).
  bool strict = false;
  int max_indent = 20;
};

/// Throws grammar_error for a schema that is not valid JSON Schema or asks for what is not
/// enforced (see above).
grammar_ir json_schema_ir(const nlohmann::json& schema, const json_schema_options& options);
/// The same from the schema's text, which keeps the properties in the order written
/// (nlohmann::json sorts them by name).
grammar_ir json_schema_ir(std::string_view schema_text, const json_schema_options& options);
/// Any JSON object.
grammar_ir json_object_ir(const json_schema_options& options);

}  // namespace actorllm::grammar
