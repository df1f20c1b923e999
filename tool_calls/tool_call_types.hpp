#pragma once
/// The values every tool-call parser produces: whole-text results and streamed events.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm::tool_calls {

/// One OpenAI tool call ("type": "function" always). `arguments` is JSON text, as OpenAI sends
/// it: for the JSON formats the model's own text of the arguments value (vLLM writes it again
/// with json.dumps; keeping the model's bytes lets the streamed pieces be sent as they come
/// and still add up to exactly this), for pythonic the JSON written from the Python literals.
struct tool_call {
  std::string id;
  std::string name;
  std::string arguments;

  bool operator==(const tool_call&) const = default;
};

/// What a parser makes of a whole output: the text that is not a call, and the calls in order.
/// The chat API sends `content` as null when it is empty and there are calls.
struct parsed_output {
  std::string content;
  std::vector<tool_call> calls;

  bool operator==(const parsed_output&) const = default;
};

/// One streamed piece, in output order. A call is announced once (call_start: index, id, name)
/// before any of its argument fragments; indexes count calls from 0 without gaps.
struct stream_event {
  enum class kind { content, call_start, call_arguments };
  kind what = kind::content;
  std::size_t call_index = 0;  // call_start and call_arguments
  std::string text;            // content, or an arguments fragment
  std::string id;              // call_start only
  std::string name;            // call_start only

  bool operator==(const stream_event&) const = default;
};

/// Bounds that keep hostile output cheap. Text held back while a call is undecided (a marker
/// prefix, the start of a call before its name is known, whitespace between calls) never
/// exceeds max_pending_bytes: past it the held text is given up as content. JSON and Python
/// literals nested deeper than max_depth are malformed.
struct parser_limits {
  std::size_t max_pending_bytes = 64 * 1024;
  std::size_t max_depth = 64;
};

/// Options shared by the tool-call parsers.
struct tool_parser_options {
  /// The request's function names. vLLM's parsers return calls to any name; with
  /// reject_unknown_names a call to a name not listed here is malformed (left as content).
  std::vector<std::string> tool_names;
  bool reject_unknown_names = false;
  /// At most this many calls are returned; later ones are parsed and dropped (1 for
  /// parallel_tool_calls false, as vLLM keeps only the first call).
  std::size_t max_calls = static_cast<std::size_t>(-1);
  parser_limits limits;
  /// Seeds the call ids; 0 draws a seed from std::random_device. Equal seeds give equal ids,
  /// which is what lets a test compare streamed and whole-text results field by field.
  std::uint64_t id_seed = 0;
};

}  // namespace actorllm::tool_calls
