#pragma once
/// Walking JSON text byte by byte: which bytes belong to a string (its quotes included),
/// escapes followed. What scans of raw JSON (its depth, its numbers) share.

namespace actorllm::api {

struct json_string_scan {
  bool in_string = false;
  bool escaped = false;

  /// Advances over `c`; true when `c` is part of a string.
  bool step(char c) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      return true;
    }
    in_string = c == '"';
    return in_string;
  }
};

}  // namespace actorllm::api
