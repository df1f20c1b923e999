#pragma once
/// GBNF, the grammar dialect of llama.cpp (and xgrammar's EBNF): rules `name ::= body`, with
/// alternation `|`, sequences, groups `( )`, repetition `*` `+` `?` `{m}` `{m,}` `{m,n}`
/// `{,n}`, string literals "..." and character classes `[a-z]` `[^...]` with the escapes
/// \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH, `.` (any character), and `#` comments.
/// Characters are Unicode code points, matched as their UTF-8 bytes.
///
/// A rule's body may span lines: it ends where the next `name ::=` begins (llama.cpp needs
/// parentheses for that; every grammar it reads reads the same here). Matching starts at
/// the rule named `root`.
#include <string_view>

#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

/// Throws grammar_error "gbnf: line L, column C: MESSAGE" for a syntax error, an undefined
/// rule, a missing `root` or a token reference (`<...>`, not supported).
grammar_ir parse_gbnf(std::string_view text);

}  // namespace actorllm::grammar
