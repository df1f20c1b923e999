// Assembles OpenAI completion and chat objects from engine deltas, streamed or whole.
#include "api/openai_call.hpp"

#include <map>
#include <utility>

#include "api/anthropic_protocol.hpp"
#include "api/prompt_logprobs.hpp"
#include "api/text_units.hpp"
#include "common/check.hpp"
#include "common/output_merge.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

json or_null(const std::string& s) {
  return s.empty() ? json() : json(s);
}

json finish_json(finish_reason reason) {
  return reason == finish_reason::none ? json() : json(to_string(reason));
}

/// vLLM's stop_reason: the stop token's id (an integer) when one ended the choice, the
/// matched stop string when one did, else null.
json stop_reason_json(int32_t stop_token, const std::string& stop_string) {
  if (stop_token >= 0) return stop_token;
  return or_null(stop_string);
}

}  // namespace

std::string system_fingerprint() {
  return "fp_actorllm_" ACTORLLM_VERSION;
}

std::string to_wire(const json& object) {
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string named_chunk(std::string_view event, const json& data) {
  return std::string(event) + '\n' + to_wire(data);
}

openai_call::openai_call(call_options options, std::vector<std::string> engine_ids)
    : options_(std::move(options)), engine_ids_(std::move(engine_ids)) {
  for (std::size_t p = 0; p < engine_ids_.size(); ++p) {
    prompt_of_.emplace(engine_ids_[p], static_cast<int32_t>(p));
  }
  choices_.resize(engine_ids_.size() * static_cast<std::size_t>(options_.n));
  prompts_.resize(engine_ids_.size());
  const bool responses = options_.kind == api_kind::responses;
  const bool messages = options_.kind == api_kind::messages;
  if ((options_.kind == api_kind::chat && options_.chat.active()) || responses || messages)
    for (auto& c : choices_) c.output = std::make_unique<chat_output>(options_.chat);
  if (responses)
    responses_ = std::make_unique<responses_renderer>(options_.id, options_.model, options_.created,
                                                      options_.responses.echo);
  if (messages)
    messages_ = std::make_unique<messages_renderer>(options_.id, options_.model, options_.thinking);
}

json openai_call::chunk_base() const {
  json chunk = {
      {"id", options_.id},
      {"object", options_.kind == api_kind::chat ? "chat.completion.chunk" : "text_completion"},
      {"created", options_.created},
      {"model", options_.model}};
  if (options_.include_usage) chunk["usage"] = options_.continuous_usage ? usage() : json();
  if (!options_.system_fingerprint.empty())
    chunk["system_fingerprint"] = options_.system_fingerprint;
  return chunk;
}

json openai_call::usage() const {
  int64_t prompt_tokens = 0, cached = 0, completion_tokens = 0;
  for (const auto& p : prompts_)
    prompt_tokens += p.num_prompt_tokens, cached += p.num_cached_tokens;
  for (const auto& c : choices_) completion_tokens += c.num_generated;
  json u = {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
  if (cached > 0) u["prompt_tokens_details"] = {{"cached_tokens", cached}};
  return u;
}

json openai_call::render_logprobs(const request_output& out, choice& c) const {
  // Completions' echo: the prompt's tokens first, then the generated ones.
  json prompt;
  if (options_.kind == api_kind::completion && options_.echo_logprobs)
    prompt = legacy_prompt_logprobs(out, c.text_offset);
  json generated = render_token_logprobs(out, c);
  append_logprobs(prompt, generated);
  return prompt;
}

json openai_call::render_token_logprobs(const request_output& out, choice& c) const {
  if (!options_.logprobs || out.logprobs.empty()) return json();
  if (options_.kind == api_kind::chat) {
    json content = json::array();
    for (std::size_t i = 0; i < out.logprobs.size(); ++i) {
      const token_logprob& lp = out.logprobs[i];
      const std::string text = token_text(out.token_texts, i, lp.token_id);
      json top = json::array();
      for (std::size_t k = 0; k < lp.top_ids.size() && k < lp.top_logprobs.size(); ++k) {
        const std::string alt = token_text(lp.top_texts, k, lp.top_ids[k]);
        top.push_back(
            {{"token", alt}, {"logprob", lp.top_logprobs[k]}, {"bytes", utf8_bytes(alt)}});
      }
      content.push_back({{"token", text},
                         {"logprob", lp.logprob},
                         {"bytes", utf8_bytes(text)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}};
  }
  json tokens = json::array(), token_logprobs = json::array(), tops = json::array(),
       offsets = json::array();
  for (std::size_t i = 0; i < out.logprobs.size(); ++i) {
    const token_logprob& lp = out.logprobs[i];
    const std::string text = token_text(out.token_texts, i, lp.token_id);
    json top = json::object();
    for (std::size_t k = 0; k < lp.top_ids.size() && k < lp.top_logprobs.size(); ++k) {
      top[token_text(lp.top_texts, k, lp.top_ids[k])] = lp.top_logprobs[k];
    }
    tokens.push_back(text);
    token_logprobs.push_back(lp.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(c.text_offset);
    c.text_offset += num_chars(text);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

void openai_call::append_logprobs(json& into, const json& delta) const {
  if (delta.is_null()) return;
  if (into.is_null()) {
    into = delta;
    return;
  }
  for (auto& [key, list] : into.items()) {
    for (const auto& v : delta.at(key)) list.push_back(v);
  }
}

void openai_call::fail(api_error error, std::vector<std::string>& chunks) {
  if (error_) return;
  error_ = std::move(error);
  if (!started_ || !options_.stream || !options_.error_chunk) return;
  if (messages_)
    chunks.push_back(named_chunk("error", anthropic_error_object(*error_)));
  else
    chunks.push_back(to_wire(error_object(*error_)));
}

void openai_call::add(const request_output& out, std::vector<std::string>& chunks) {
  if (done()) return;
  auto it = prompt_of_.find(out.request_id);
  if (it == prompt_of_.end()) return;
  if (out.finish == finish_reason::error) {
    fail(engine_error(out.error, out.error_status, out.error_param), chunks);
    return;
  }
  if (out.index < 0 || out.index >= options_.n) return;
  const std::size_t index = static_cast<std::size_t>(it->second) * options_.n + out.index;
  choice& c = choices_[index];
  if (c.finish != finish_reason::none) return;
  prompt& p = prompts_[it->second];
  p.num_prompt_tokens = std::max(p.num_prompt_tokens, out.num_prompt_tokens);
  p.num_cached_tokens = std::max(p.num_cached_tokens, out.num_cached_tokens);
  c.num_generated = std::max(c.num_generated, out.num_generated_tokens);
  c.finish = out.finish;
  c.stop_reason = out.stop_reason;
  c.stop_token = out.stop_token;
  if (c.finish != finish_reason::none) ++num_finished_;
  json logprobs = render_logprobs(out, c);
  json prompt_logprobs = options_.prompt_logprobs ? vllm_prompt_logprobs(out) : json();
  json parsed;  // chat_output's delta
  if (c.output) parsed = c.output->feed(out.text, c.finish != finish_reason::none);

  if (!options_.stream) {
    c.text += out.text;
    append_logprobs(c.logprobs, logprobs);
    if (!prompt_logprobs.is_null()) c.prompt_logprobs = std::move(prompt_logprobs);
    if (responses_ && c.finish != finish_reason::none && !failed())
      responses_->finish(c.output->message(), c.output->finish_reason(c.finish), usage());
    return;
  }
  if (responses_) {
    if (!started_) responses_->open(chunks);
    started_ = true;
    responses_->on_delta(parsed, chunks);
    if (c.finish != finish_reason::none)
      responses_->close(c.output->finish_reason(c.finish), usage(), chunks);
    return;
  }
  if (messages_) {
    if (!started_) messages_->open(p.num_prompt_tokens, chunks);
    started_ = true;
    messages_->on_delta(parsed, chunks);
    if (c.finish != finish_reason::none)
      messages_->close(c.finish, c.stop_reason, p.num_prompt_tokens, c.num_generated, chunks);
    return;
  }
  const bool chat = options_.kind == api_kind::chat;
  if (chat && !started_) {
    // OpenAI opens every chat choice with a delta that carries only the role.
    for (std::size_t i = 0; i < choices_.size(); ++i) {
      json chunk = chunk_base();
      chunk["choices"] = json::array({{{"index", i},
                                       {"delta", {{"role", options_.chat.role}, {"content", ""}}},
                                       {"logprobs", nullptr},
                                       {"finish_reason", nullptr}}});
      chunks.push_back(to_wire(chunk));
    }
  }
  started_ = true;
  if (c.output) {
    if (parsed.is_null() && out.finish == finish_reason::none && logprobs.is_null()) return;
    chunks.push_back(render_parsed_chunk(index, parsed, logprobs, c));
    return;
  }
  if (out.text.empty() && out.finish == finish_reason::none && logprobs.is_null()) return;
  chunks.push_back(render_chunk(index, out, logprobs, c));
  if (!prompt_logprobs.is_null()) {
    // Once per choice, with its first chunk: rebuilt as an object (the frame has no room).
    json chunk = json::parse(chunks.back());
    chunk["choices"][0]["prompt_logprobs"] = std::move(prompt_logprobs);
    chunks.back() = to_wire(chunk);
  }
}

std::string openai_call::render_parsed_chunk(std::size_t index, const json& delta,
                                             const json& logprobs, const choice& c) const {
  json chunk = chunk_base();
  chunk["choices"] = json::array(
      {{{"index", index},
        {"delta", delta.is_null() ? json::object() : delta},
        {"logprobs", logprobs},
        {"finish_reason",
         c.finish == finish_reason::none ? json() : json(c.output->finish_reason(c.finish))},
        {"stop_reason", stop_reason_json(c.stop_token, c.stop_reason)}}});
  return to_wire(chunk);
}

// NOTE: a streamed chunk is written as text around the call's fixed frame rather than built
// as a JSON object: that object (a dozen map nodes and strings) cost more than the token it
// carried. The bytes are those of to_wire(chunk): nlohmann's objects sort their keys, so the
// entry's keys are written in that order, and every string goes through to_wire's escaping.
std::string openai_call::render_chunk(std::size_t index, const request_output& out,
                                      const json& logprobs, const choice& c) {
  constexpr std::string_view opening = "{\"choices\":[";  // "choices" sorts first
  if (frame_suffix_.empty()) {
    json base = chunk_base();
    base["choices"] = json::array();
    if (options_.include_usage) base["usage"] = nullptr;  // "usage" sorts last: see below
    const std::string empty = to_wire(base);
    ACTORLLM_CHECK(empty.starts_with(std::string(opening) + "]"));
    frame_suffix_ = empty.substr(opening.size());
    ACTORLLM_CHECK(!options_.include_usage || frame_suffix_.ends_with(",\"usage\":null}"));
  }
  const bool chat = options_.kind == api_kind::chat;
  const std::string text = to_wire(json(out.text));
  std::string chunk;
  chunk.reserve(opening.size() + frame_suffix_.size() + text.size() + 96);
  chunk += opening;
  chunk += '{';
  if (chat) chunk += out.text.empty() ? "\"delta\":{}," : "\"delta\":{\"content\":" + text + "},";
  chunk += "\"finish_reason\":";
  chunk += out.finish == finish_reason::none ? "null" : to_wire(json(to_string(out.finish)));
  chunk += ",\"index\":";
  chunk += std::to_string(index);
  chunk += ",\"logprobs\":";
  chunk += logprobs.is_null() ? "null" : to_wire(logprobs);
  chunk += ",\"stop_reason\":";
  if (c.stop_token >= 0) {
    chunk += std::to_string(c.stop_token);  // what to_wire(stop_reason_json(...)) writes
  } else {
    chunk += c.stop_reason.empty() ? "null" : to_wire(json(c.stop_reason));
  }
  if (!chat) chunk += ",\"text\":" + text;
  chunk += '}';
  if (options_.include_usage && options_.continuous_usage) {
    constexpr std::string_view null_usage = "null}";  // the frame's end: ..."usage":null}
    chunk.append(frame_suffix_, 0, frame_suffix_.size() - null_usage.size());
    chunk += to_wire(usage());
    chunk += '}';
  } else {
    chunk += frame_suffix_;
  }
  return chunk;
}

std::string openai_call::usage_chunk() const {
  json chunk = chunk_base();
  chunk["choices"] = json::array();
  chunk["usage"] = usage();
  return to_wire(chunk);
}

json openai_call::response_object() const {
  return responses_ ? responses_->whole() : json();
}

json openai_call::partial_response_object(const std::string& status) const {
  if (!responses_) return json();
  const choice& c = choices_.front();
  json object = responses_->response(c.output->message(), "stop", usage());
  object["status"] = status;
  return object;
}

json openai_call::pending_response_object(const std::string& status) const {
  return responses_ ? responses_->pending(status) : json();
}

std::string openai_call::response() const {
  if (responses_) return to_wire(responses_->whole());
  if (messages_) {
    const choice& c = choices_.front();
    return to_wire(messages_->message(c.output->message(), c.finish, c.stop_reason,
                                      prompts_.front().num_prompt_tokens, c.num_generated));
  }
  const bool chat = options_.kind == api_kind::chat;
  json choices = json::array();
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    const choice& c = choices_[i];
    json entry = {{"index", i}};
    if (c.output) {
      entry["message"] = c.output->message();
    } else if (chat) {
      entry["message"] = {{"role", options_.chat.role}, {"content", c.text}};
    } else {
      entry["text"] = c.text;
    }
    entry["logprobs"] = options_.logprobs && c.logprobs.is_null()
                            ? (chat ? json{{"content", json::array()}} : json())
                            : c.logprobs;
    entry["finish_reason"] = c.output && c.finish != finish_reason::none
                                 ? json(c.output->finish_reason(c.finish))
                                 : finish_json(c.finish);
    entry["stop_reason"] = stop_reason_json(c.stop_token, c.stop_reason);
    if (options_.prompt_logprobs && !chat) entry["prompt_logprobs"] = c.prompt_logprobs;
    choices.push_back(std::move(entry));
  }
  json object = {{"id", options_.id},
                 {"object", chat ? "chat.completion" : "text_completion"},
                 {"created", options_.created},
                 {"model", options_.model},
                 {"choices", std::move(choices)},
                 {"usage", usage()}};
  if (!options_.system_fingerprint.empty())
    object["system_fingerprint"] = options_.system_fingerprint;
  // vLLM answers a chat's prompt_logprobs once, beside its choices (they share the prompt).
  if (options_.prompt_logprobs && chat)
    object["prompt_logprobs"] = choices_.front().prompt_logprobs;
  return to_wire(object);
}

void merge_deltas(std::vector<request_output>& outputs) {
  if (outputs.size() < 2) return;
  std::vector<request_output> merged;
  merged.reserve(outputs.size());
  std::map<std::pair<std::string, int32_t>, std::size_t> open;  // choice -> unfinished slot
  for (auto& out : outputs) {
    auto key = std::make_pair(out.request_id, out.index);
    auto it = open.find(key);
    if (it == open.end() || out.finish == finish_reason::error) {
      if (out.finish == finish_reason::none) open[key] = merged.size();
      merged.push_back(std::move(out));
      continue;
    }
    merge_delta(merged[it->second], out);
    if (out.finish != finish_reason::none) open.erase(it);
  }
  outputs = std::move(merged);
}

}  // namespace actorllm::api
