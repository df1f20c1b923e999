#pragma once
/// The streaming core every tool-call format shares. A parser reads the generated text byte by
/// byte; each byte ends up as content, as part of a call (its markers, name and arguments), or
/// held back until that is decided. Every decision depends on the bytes alone, never on where
/// the deltas were cut, so any chunking streams the same events, and parse_whole (one feed,
/// then finish) is exactly their concatenation.
///
/// A call is committed (its call_start sent) once its name is complete and its arguments have
/// begun. Before that, malformed text gives everything held back as content; after it, a
/// syntax error keeps the calls sent so far and returns the rest of the output, from the
/// offending byte on, as content. Either way the parser then stops looking for calls: a
/// malformed call ends tool parsing for the rest of the output. Output that ends inside a
/// committed call (max_tokens) keeps the call with the arguments received so far, as OpenAI
/// does with finish_reason "length"; one that ends before the commit is content.
#include <string>
#include <string_view>
#include <vector>

#include "tool_calls/call_id.hpp"
#include "tool_calls/json_call_scanner.hpp"
#include "tool_calls/tool_call_types.hpp"
#include "tool_calls/whitespace.hpp"

namespace actorllm::tool_calls {

class tool_call_parser {
 public:
  explicit tool_call_parser(tool_parser_options options);
  virtual ~tool_call_parser() = default;
  tool_call_parser(const tool_call_parser&) = delete;
  tool_call_parser& operator=(const tool_call_parser&) = delete;

  /// The next piece of generated text; returns the events that are decided now (adjacent
  /// content and argument pieces merged).
  std::vector<stream_event> feed(std::string_view delta);
  /// The end of the output: decides what was held back.
  std::vector<stream_event> finish();

  /// vLLM's name for the format ("hermes", ...).
  virtual std::string_view name() const = 0;
  /// Whether any call has been started so far (the chat API's finish_reason "tool_calls").
  bool has_calls() const { return num_calls_ > 0; }

 protected:
  /// One byte of output (not called once the parser has given up).
  virtual void consume(char c) = 0;
  /// End of output.
  virtual void at_end() = 0;

  void emit_content(std::string_view text);
  /// Starts call number num_calls_ (unless reject_unknown_names refuses the name: then
  /// returns false and nothing is sent). A call past max_calls is accepted but neither it
  /// nor its arguments are sent.
  bool start_call(std::string call_name);
  void emit_arguments(std::string_view text);
  /// Sends `held` as content and treats the rest of the output as content.
  void give_up(std::string_view held);
  bool gave_up() const { return gave_up_; }

  bool name_is_known(std::string_view call_name) const;

  /// Holds `c` back in region_ while it may still turn out to be part of a call. Past
  /// max_pending_bytes everything held is given up as content, and false comes back.
  bool hold(char c);
  /// What reading one byte of a JSON call object ({"name": ..., "arguments": ...}) gave.
  enum class json_call_step { more, done, failed };
  /// One byte of a JSON call object, as every JSON format reads it: held in region_ until
  /// the call is committed (name complete and arguments begun: then its call_start and the
  /// arguments read so far go out), then argument bytes sent as they come. `failed`: the
  /// parser gave up (malformed object, refused name, or too much held). `done`: the object
  /// closed as a committed call.
  json_call_step read_json_call_byte(json_call_scanner& scanner, bool& committed,
                                     std::string& early_arguments, char c);
  /// Mistral formats override this with 9-character ids.
  virtual std::string next_call_id() { return ids_.next_openai_id(); }
  const tool_parser_options& options() const { return options_; }
  const parser_limits& limits() const { return options_.limits; }
  call_id_source& ids() { return ids_; }

  std::string region_;  ///< raw text held back: not yet content, not part of a sent call

 private:
  std::vector<stream_event> take_events();

  tool_parser_options options_;
  call_id_source ids_;
  std::vector<stream_event> events_;
  std::size_t num_calls_ = 0;
  bool dropping_call_ = false;  // the current call is past max_calls
  bool gave_up_ = false;
};

/// The whole-text parse: feed(text) then finish(), folded into one result.
parsed_output parse_whole(tool_call_parser& parser, std::string_view text);
/// Folds streamed events into the result they describe (a test's and a client's view).
void apply_events(parsed_output& into, const std::vector<stream_event>& events);

}  // namespace actorllm::tool_calls
