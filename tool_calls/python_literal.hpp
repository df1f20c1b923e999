#pragma once
/// Reads one Python literal a byte at a time and writes it as JSON, as ast.literal_eval then
/// json.dumps would: strings ('...' or "...", with Python's escapes), ints and floats, True /
/// False / None, lists, tuples (as JSON arrays) and dicts with string keys, with json.dumps'
/// separators (", " and ": "). Anything else (names, calls, operators, bytes, f-strings, set
/// literals, non-finite numbers) is an error, as are containers nested deeper than max_depth.
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm::tool_calls {

class python_literal_reader {
 public:
  enum class status {
    more,
    done,         // this byte ended the literal
    done_before,  // the literal ended just before this byte, which is not part of it
    error,
  };

  explicit python_literal_reader(std::size_t max_depth) : max_depth_(max_depth) {}

  /// Reads one byte; leading whitespace is skipped.
  status feed(char c);
  /// The JSON written so far; it only grows (complete once feed returned done or
  /// done_before).
  const std::string& json() const { return json_; }

 private:
  enum class state : std::uint8_t {
    value,
    colon,
    after_value,
    string,
    string_escape,
    string_hex,
    number,
    word,
    done,
    error,
  };
  struct frame {
    char closer;  // ']', ')' or '}'
    bool in_key = false;
    std::size_t count = 0;  // values (or key-value pairs) written
  };

  status step(char c);
  status begin_value(char c);
  status end_value(bool consumed);
  status close(char c);
  bool end_scalar();
  void write_escaped_code(unsigned value);

  std::size_t max_depth_;
  state state_ = state::value;
  std::vector<frame> stack_;
  std::string json_;
  char quote_ = '"';
  unsigned hex_value_ = 0;
  int hex_left_ = 0;
  std::string scalar_;  // a number or a word being read
};

}  // namespace actorllm::tool_calls
