#pragma once
// Helpers for the grammar tests: a tiny vocabulary of single bytes, and "does this grammar
// match this text" through a real matcher.
#include <memory>
#include <string>
#include <string_view>

#include "grammar/grammar.hpp"

namespace actorllm::grammar::testing {

/// Token b (0-255) is the byte b; token 256 is EOS.
inline std::shared_ptr<const vocabulary> byte_vocabulary() {
  static const auto v = [] {
    std::vector<std::string> bytes(257);
    for (int b = 0; b < 256; ++b) bytes[b] = std::string(1, static_cast<char>(b));
    return vocabulary::from_bytes(std::move(bytes), {}, {256});
  }();
  return v;
}

/// True when the whole of `text` is a match of `g`.
inline bool matches(const std::shared_ptr<const compiled_grammar>& g, std::string_view text) {
  matcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

/// True when `text` can be continued into a match (a prefix of one, or one).
inline bool is_prefix(const std::shared_ptr<const compiled_grammar>& g, std::string_view text) {
  matcher m(g);
  return m.accept_bytes(text);
}

inline std::shared_ptr<const compiled_grammar> gbnf(std::string_view text) {
  return compile_gbnf(text, byte_vocabulary());
}
inline std::shared_ptr<const compiled_grammar> regex(std::string_view pattern) {
  return compile_regex(pattern, byte_vocabulary());
}
inline std::shared_ptr<const compiled_grammar> schema(std::string_view text, bool strict = true) {
  json_schema_options options;
  options.strict = strict;
  return compile_json_schema(text, options, byte_vocabulary());
}

}  // namespace actorllm::grammar::testing
