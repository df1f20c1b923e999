#pragma once
/// The one exception the grammar core throws for a user's mistake: a grammar, regular
/// expression or schema that does not parse, or asks for something the engine cannot enforce.
/// Callers turn it into a 400 whose message is what(). Broken invariants abort instead
/// (ACTORLLM_CHECK); nothing else is thrown for bad input.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace actorllm::grammar {

class grammar_error : public std::invalid_argument {
 public:
  /// `what` is the whole message, already naming the position (byte offset, or JSON pointer
  /// for schemas) where that helps.
  explicit grammar_error(const std::string& what) : std::invalid_argument(what) {}
};

}  // namespace actorllm::grammar
