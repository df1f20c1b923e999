#pragma once
/// Tool calls and reasoning in generated text, as vLLM's --tool-call-parser and
/// --reasoning-parser find them. Pure cores: text in, OpenAI-shaped values out.
///
/// Per request (one parser object per choice / sequence; parsers are not shared):
///
///   auto reasoning = make_reasoning_parser("qwen3", prompt_opens_reasoning(prompt));
///   auto tools = make_tool_call_parser("hermes", {.tool_names = names_from_request});
///
/// Streaming: for every detokenized delta of the sequence,
///
///   reasoning_split r = reasoning->feed(delta);        // reasoning first, then content
///   send r.reasoning as delta.reasoning_content (and vLLM's delta.reasoning);
///   for (const stream_event& e : tools->feed(r.content)) {
///     content        -> delta.content = e.text
///     call_start     -> delta.tool_calls = [to_openai_delta(e)]   // index, id, type, name
///     call_arguments -> delta.tool_calls = [to_openai_delta(e)]   // an arguments fragment
///   }
///
/// and at the end of the sequence the same with reasoning->finish() and tools->finish()
/// (feed finish()'s content through tools->feed first). finish_reason is "tool_calls" when
/// tools->has_calls() and the sequence stopped normally. Events may be merged freely into
/// fewer chunks; adjacent ones of one kind already are.
///
/// Whole text: split_reasoning(*reasoning, text), then parse_whole(*tools, content) gives
/// message.content ("" means null when there are calls) and message.tool_calls
/// (to_openai_json). It is by construction what the streamed events concatenate to, for any
/// chunking: the tests check every split point.
///
/// Text that might start a call is held back until decided, within
/// parser_limits::max_pending_bytes; tool_call_parser.hpp states what happens to malformed
/// calls (they become content, as in vLLM). With tool_choice "none" do not make a tool parser.
#include "tool_calls/openai_json.hpp"
#include "tool_calls/reasoning_parser.hpp"
#include "tool_calls/registry.hpp"
#include "tool_calls/tool_call_parser.hpp"
#include "tool_calls/tool_call_types.hpp"
