#pragma once
/// Regular expressions as vLLM's guided_regex and JSON Schema's `pattern` write them, compiled
/// to a grammar rule. The match is always of the whole text (as if wrapped in ^...$), which for
/// a `pattern` keyword generates a subset of what the unanchored pattern accepts.
///
/// Supported: literals, `.` (any character except line terminators), classes `[a-z]` `[^...]`
/// with \d \w \s \D \W \S (also outside classes; \d and \w are ASCII, \D and \W match ASCII
/// characters only, so each matches the same in Python and ECMAScript), groups `( )` `(?: )`
/// `(?<name> )` `(?P<name> )`, alternation, quantifiers `*` `+` `?` `{m}` `{m,}` `{m,n}` (lazy
/// forms too), escapes \n \r \t \f \v \0 \xHH \uHHHH (surrogate pairs joined), and anchors
/// `^` `$` `\A` `\Z` `\z` at the ends. Refused with a grammar_error naming them:
/// backreferences, lookaround, word boundaries, inline flags, possessive quantifiers, Unicode
/// property escapes, and anchors anywhere else.
#include <string_view>

#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

/// How the matched text is written out.
enum class regex_output {
  raw,          // the characters themselves
  json_string,  // inside a JSON string: `"` `\` and control characters as JSON escapes
};

/// The rule body matching exactly the texts of `pattern`. Throws grammar_error
/// "regex: at offset N: MESSAGE".
expr parse_regex(std::string_view pattern, regex_output output = regex_output::raw);

/// One character of `ranges` as written inside a JSON string: itself, or for `"`, `\` and
/// U+0000-U+001F its escape (\" \\ \n \r \t \b \f, else \u00XX in either case).
expr json_string_char(std::vector<code_point_range> ranges);

}  // namespace actorllm::grammar
