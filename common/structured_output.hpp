#pragma once
/// What a request's output must match (structured output): a JSON Schema, any JSON object, a
/// regular expression, one of a list of strings, or a GBNF grammar. Plain data carried in
/// sampling_params: net/ fills it from response_format, structured_outputs or guided_*, the
/// router compiles it once to refuse a bad one, and each worker follows it while sampling.
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm {

enum class output_constraint : uint8_t { none, json_schema, json_object, regex, choice, grammar };

struct structured_output {
  output_constraint kind = output_constraint::none;
  /// The schema's JSON text (properties in the order the client wrote them), the regular
  /// expression, or the GBNF grammar; empty for json_object and choice.
  std::string source;
  std::vector<std::string> choices;  ///< for choice: the output is exactly one of them
  /// JSON without any whitespace between tokens (OpenAI's strict json_schema, vLLM's
  /// disable_any_whitespace); otherwise a bounded amount of optional whitespace.
  bool compact_whitespace = false;
  /// With a reasoning parser (net/ sets this), the constraint starts once the reasoning has
  /// ended, as in vLLM: after the model's "</think>" token, in the prompt or the output (from
  /// the start when the vocabulary has no such token).
  bool after_reasoning = false;
  /// The request field it came from ("response_format", "structured_outputs", "guided_json",
  /// ...), named in the error when it does not compile.
  std::string field;

  bool active() const { return kind != output_constraint::none; }
};

/// The constraint's name as the API and the logs spell it.
inline const char* constraint_name(output_constraint kind) {
  switch (kind) {
    case output_constraint::none:
      return "none";
    case output_constraint::json_schema:
      return "json";
    case output_constraint::json_object:
      return "json_object";
    case output_constraint::regex:
      return "regex";
    case output_constraint::choice:
      return "choice";
    case output_constraint::grammar:
      return "grammar";
  }
  return "none";
}

}  // namespace actorllm
