#pragma once
/// Jinja lexing in two steps: the template is cut into text, {{ output }} and {% statement %}
/// chunks (comments dropped, whitespace control applied as Hugging Face configures Jinja:
/// trim_blocks and lstrip_blocks on, `-` and `+` modifiers honoured), then the inside of each
/// tag is cut into expression tokens.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace actorllm::jinja {

struct chunk {
  enum class kind { text, output, statement };
  kind type;
  std::string content;  ///< the text, or what is between the tag's delimiters
  int line;             ///< 1-based line where the chunk starts
};

/// Throws jinja::error for an unterminated tag or comment.
std::vector<chunk> split_template(std::string_view source, bool trim_blocks = true,
                                  bool lstrip_blocks = true);

struct token {
  enum class kind { name, string, integer, number, op, end };
  kind type;
  std::string text;  ///< name, operator, or the unescaped string literal
  int64_t integer = 0;
  double number = 0;
  int line = 0;
};

/// Tokens of one tag's content, ending with a kind::end token. Throws jinja::error on an
/// unknown character or an unterminated string.
std::vector<token> tokenize_expression(std::string_view content, int line);

}  // namespace actorllm::jinja
