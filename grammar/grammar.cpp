#include "grammar/grammar.hpp"

#include "grammar/automaton_builder.hpp"
#include "grammar/gbnf_parser.hpp"
#include "grammar/regex_parser.hpp"

namespace actorllm::grammar {

std::shared_ptr<const compiled_grammar> compile_ir(const grammar_ir& ir,
                                                   std::shared_ptr<const vocabulary> vocab) {
  return std::make_shared<const compiled_grammar>(build_automaton(ir), std::move(vocab));
}

grammar_ir regex_ir(std::string_view pattern) {
  grammar_ir ir;
  ir.root = ir.rule_index("root");
  ir.rules[ir.root].body = parse_regex(pattern);
  return ir;
}

grammar_ir choice_ir(std::span<const std::string> choices) {
  if (choices.empty()) throw grammar_error("choice: the list of choices is empty");
  std::vector<expr> alternatives;
  for (const std::string& c : choices) alternatives.push_back(literal(c));
  grammar_ir ir;
  ir.root = ir.rule_index("root");
  ir.rules[ir.root].body = alternation(std::move(alternatives));
  return ir;
}

std::shared_ptr<const compiled_grammar> compile_gbnf(std::string_view text,
                                                     std::shared_ptr<const vocabulary> vocab) {
  return compile_ir(parse_gbnf(text), std::move(vocab));
}

std::shared_ptr<const compiled_grammar> compile_regex(std::string_view pattern,
                                                      std::shared_ptr<const vocabulary> vocab) {
  return compile_ir(regex_ir(pattern), std::move(vocab));
}

std::shared_ptr<const compiled_grammar> compile_choice(std::span<const std::string> choices,
                                                       std::shared_ptr<const vocabulary> vocab) {
  return compile_ir(choice_ir(choices), std::move(vocab));
}

std::shared_ptr<const compiled_grammar> compile_json_schema(
    const nlohmann::json& schema, const json_schema_options& options,
    std::shared_ptr<const vocabulary> vocab) {
  return compile_ir(json_schema_ir(schema, options), std::move(vocab));
}

std::shared_ptr<const compiled_grammar> compile_json_schema(
    std::string_view schema_text, const json_schema_options& options,
    std::shared_ptr<const vocabulary> vocab) {
  return compile_ir(json_schema_ir(schema_text, options), std::move(vocab));
}

std::shared_ptr<const compiled_grammar> compile_json_object(
    const json_schema_options& options, std::shared_ptr<const vocabulary> vocab) {
  return compile_ir(json_object_ir(options), std::move(vocab));
}

}  // namespace actorllm::grammar
