#pragma once
/// A byte-at-a-time JSON reader for the JSON tool-call formats. In call_object mode it reads
/// one object such as {"name": "get_weather", "arguments": {"city": "Paris"}} and reports the
/// name when its string ends and which bytes belong to the arguments value ("arguments", or
/// Llama's "parameters"; the first of them counts), so those can be streamed as they come. In
/// arguments_value mode every byte of one object or array is arguments (Mistral's
/// name[ARGS]{...} form). It checks JSON syntax fully (RFC 8259, no comments, no trailing
/// commas) and refuses nesting deeper than max_depth, with O(1) work per byte.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace actorllm::tool_calls {

class json_call_scanner {
 public:
  enum class mode { call_object, arguments_value };
  enum class status { more, done, error };
  struct byte_result {
    status state = status::more;
    bool in_arguments = false;   // this byte is part of the arguments value
    bool name_complete = false;  // this byte closed the name string
  };

  json_call_scanner(mode m, std::size_t max_depth);

  /// Reads one byte; the first must open the value ('{', or '[' in arguments_value mode).
  /// After done or error, further bytes are errors.
  byte_result feed(char c);

  /// The decoded name, once its string has ended.
  const std::optional<std::string>& name() const { return name_; }
  bool arguments_started() const { return arguments_started_; }

 private:
  enum class state : std::uint8_t {
    start,
    value,           // a value must come
    key_or_close,    // after '{'
    key,             // after ',' in an object
    colon,           // after a key
    comma_or_close,  // after a value inside a container
    value_or_close,  // after '['
    string,
    string_escape,
    string_hex,
    number,
    literal,
    done,
    error,
  };
  enum class role : std::uint8_t { none, key, name, arguments };

  byte_result step(char c);
  bool begin_value(char c, byte_result& r);
  bool end_value(byte_result& r);
  bool close_container(char c, byte_result& r);
  bool number_accepts(char c);
  bool number_can_end() const;

  mode mode_;
  std::size_t max_depth_;
  state state_ = state::start;
  std::vector<char> stack_;  // '{' or '['
  // The member of the call object whose value or key is being read, at depth 1.
  role role_ = role::none;
  role value_role_ = role::none;  // what the next depth-1 value is
  std::string token_;             // raw text of a depth-1 key or the name string
  bool string_is_key_ = false;
  int hex_left_ = 0;
  std::uint8_t number_state_ = 0;
  std::string_view literal_;
  std::size_t literal_pos_ = 0;
  bool args_active_ = false;  // the bytes being read belong to the arguments value
  bool arguments_started_ = false;
  bool arguments_seen_ = false;
  std::optional<std::string> name_;
};

}  // namespace actorllm::tool_calls
