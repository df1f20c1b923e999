#pragma once
/// Tool calls and reasoning in generated text, as vLLM's --tool-call-parser and
/// --reasoning-parser find them. Pure cores: text in, OpenAI-shaped values out.
///
/// At startup, validate the configured names: check_tool_call_parser_name(name) and
/// check_reasoning_parser_name(name) return the error to show (it lists the known names).
///
/// Per generated sequence (parsers keep state; one per choice, never shared):
///
///   assistant_output_parser parser(
///       reasoning_name.empty() ? nullptr
///           : make_reasoning_parser(reasoning_name, prompt_opens_reasoning(prompt_text)),
///       tool_choice_is_none || tools.empty() ? nullptr
///           : make_tool_call_parser(tool_parser_name, {.tool_names = names_of(tools)}));
///
/// With tool_choice "required" or a named function the output is forced by the
/// structured-output engine with required_calls_schema(tools) / named_call_schema(tools, name),
/// and read by required_calls_parser / named_call_parser in place of the model's format.
/// parallel_tool_calls false: tool_parser_options::max_calls = 1.
///
/// Streaming: for every detokenized delta, output_delta d = parser.feed(delta), and at the end
/// d = parser.finish(). Send
///   d.reasoning                    -> delta.reasoning_content (and vLLM's delta.reasoning)
///   each event in d.events, in order:
///     content        -> delta.content = e.text
///     call_start     -> delta.tool_calls = [to_openai_delta(e)]  (index, id, type, name, "")
///     call_arguments -> delta.tool_calls = [to_openai_delta(e)]  (index, arguments fragment)
/// Events may be packed into fewer chunks as long as their order is kept. finish_reason is
/// "tool_calls" when parser.has_calls() and the sequence stopped on its own (not "length").
/// If every delta fed is whole UTF-8, so is every piece sent. Detokenize with
/// skip_special_tokens false for mistral, as vLLM does: [TOOL_CALLS] and [ARGS] are special
/// tokens. Qwen's <tool_call> and <think> are not special; Llama's <|python_tag|> is, and
/// llama3_json recognises the call without it.
///
/// Whole text: parse_whole(parser, text) gives reasoning_content, content and the calls
/// (to_openai_json for message.tool_calls; send content as null when there are calls and it
/// is empty; vLLM sends whitespace-only content as it is). It equals what the streamed pieces
/// concatenate to, for any chunking, by construction: the tests check every split point.
///
/// What is held back while undecided (a marker's prefix, a call before its name and arguments
/// are known, whitespace between calls) is bounded by parser_limits::max_pending_bytes; what
/// becomes of malformed and cut calls is stated in tool_call_parser.hpp (malformed calls are
/// content, as in vLLM). parser.reasoning_ended() tells when a structured-output constraint
/// should start, as vLLM starts it after the thinking.
#include "tool_calls/assistant_output_parser.hpp"
#include "tool_calls/forced_calls_parser.hpp"
#include "tool_calls/forced_calls_schema.hpp"
#include "tool_calls/openai_json.hpp"
#include "tool_calls/reasoning_parser.hpp"
#include "tool_calls/registry.hpp"
#include "tool_calls/tool_call_parser.hpp"
#include "tool_calls/tool_call_types.hpp"
