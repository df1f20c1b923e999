#pragma once
/// Structured output: compile what a request asks for (a GBNF grammar, a regular
/// expression, a choice list, a JSON Schema, any JSON object) into a compiled_grammar for the
/// model's vocabulary, then follow each sequence with a matcher.
///
///   auto vocab = vocabulary::from_tokenizer(tok, model_vocab_size);   // once per model
///   auto g = compile_json_schema(schema, {.strict = true}, vocab);   // once per request
///   matcher m(g);                                                     // once per sequence
///   m.fill_mask(bits); apply_token_mask(logits, bits); sample; m.accept_token(id);
///
/// How it works: every source becomes a grammar_ir (rules over bytes), then one byte-level
/// pushdown automaton (automaton.hpp: a DFA per rule; rules that do not recurse are inlined
/// unless marked shared). A matcher runs it as a set of positions, each a state and a
/// hash-consed stack of return states (stack_walker.hpp) — a stack-of-positions matcher
/// rather than Earley items, because what schemas and regexes produce is mostly regular: one
/// position, no stack, in the common case, and a position's future depends only on its state
/// and stack, which is what makes the caches below possible. A mask is the union over the
/// positions of: the tokens the state accepts whatever the stack (computed once per state by
/// walking the vocabulary trie, token_cache.hpp); those decided knowing the frame just below
/// (once per state and return state); and the last few, read with the real stack
/// (token_walk.hpp). A sequence's state can be rebuilt by replaying its tokens.
///
/// Every compile function throws grammar_error with the parser's message and position for
/// bad input, and names any feature it cannot enforce instead of ignoring it.
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "grammar/compiled_grammar.hpp"
#include "grammar/grammar_error.hpp"
#include "grammar/grammar_ir.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/matcher.hpp"
#include "grammar/token_mask.hpp"
#include "grammar/vocabulary.hpp"

namespace actorllm::grammar {

/// A GBNF grammar (llama.cpp's dialect, gbnf_parser.hpp); matching starts at `root`.
std::shared_ptr<const compiled_grammar> compile_gbnf(std::string_view text,
                                                     std::shared_ptr<const vocabulary> vocab);
/// A regular expression matched against the whole output (regex_parser.hpp).
std::shared_ptr<const compiled_grammar> compile_regex(std::string_view pattern,
                                                      std::shared_ptr<const vocabulary> vocab);
/// Exactly one of `choices` (vLLM's guided_choice). An empty list is refused.
std::shared_ptr<const compiled_grammar> compile_choice(std::span<const std::string> choices,
                                                       std::shared_ptr<const vocabulary> vocab);
/// A JSON value valid against `schema` (json_schema.hpp lists what is enforced).
std::shared_ptr<const compiled_grammar> compile_json_schema(
    const nlohmann::json& schema, const json_schema_options& options,
    std::shared_ptr<const vocabulary> vocab);
/// The same from the schema's text: properties are written in the schema's order.
std::shared_ptr<const compiled_grammar> compile_json_schema(
    std::string_view schema_text, const json_schema_options& options,
    std::shared_ptr<const vocabulary> vocab);
/// Any JSON object (OpenAI's response_format json_object).
std::shared_ptr<const compiled_grammar> compile_json_object(
    const json_schema_options& options, std::shared_ptr<const vocabulary> vocab);
/// Any grammar_ir (what the functions above build).
std::shared_ptr<const compiled_grammar> compile_ir(const grammar_ir& ir,
                                                   std::shared_ptr<const vocabulary> vocab);

/// The grammar_ir of a regex or a choice list (the others: parse_gbnf, json_schema_ir).
grammar_ir regex_ir(std::string_view pattern);
grammar_ir choice_ir(std::span<const std::string> choices);

}  // namespace actorllm::grammar
