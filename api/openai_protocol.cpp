// Request parsing for the OpenAI API. Every check names the offending parameter, as
// OpenAI's own 400 answers do, so that clients can show which field was wrong.
#include "api/openai_protocol.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "api/chat_content.hpp"
#include "api/json_numbers.hpp"
#include "api/json_text.hpp"
#include "api/structured_output_fields.hpp"
#include "api/tool_fields.hpp"
#include "api/unsupported_fields.hpp"
#include "common/sampling_contract.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

/// The protocol's own bound on logprobs / top_logprobs; the engine applies the server's
/// tighter --max-logprobs (20 by default, as in vLLM).
constexpr int max_logprobs_bound = 1024;

/// Reads typed, range-checked fields of one JSON object. A null field counts as absent, as
/// several clients send null for "not given". The first failure is kept in `error`.
struct field_reader {
  const json& obj;
  std::optional<api_error> error;

  const json* find(const char* key) const { return given_field(obj, key); }
  bool fail(std::string message, const char* param) {
    if (!error) error = bad_request(std::move(message), param);
    return false;
  }
  bool read_bool(const char* key, bool& out) {
    const json* v = find(key);
    if (!v) return true;
    if (!v->is_boolean()) return fail(std::string(key) + " must be a boolean", key);
    out = v->get<bool>();
    return true;
  }
  bool read_int(const char* key, int32_t& out, int64_t lo, int64_t hi) {
    const json* v = find(key);
    if (!v) return true;
    int64_t value = 0;
    if (!as_integer(*v, value)) return fail(std::string(key) + " must be an integer", key);
    if (value < lo || value > hi) {
      return fail(std::string(key) + " must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got " + std::to_string(value),
                  key);
    }
    out = static_cast<int32_t>(value);
    return true;
  }
  bool read_float(const char* key, float& out, double lo, double hi, bool lo_open = false) {
    const json* v = find(key);
    if (!v) return true;
    if (!v->is_number()) return fail(std::string(key) + " must be a number", key);
    const double value = v->get<double>();
    if (std::fabs(value) > std::numeric_limits<float>::max())
      return fail(std::string(key) + " is out of range", key);
    if (!std::isfinite(value) || value < lo || value > hi || (lo_open && value == lo)) {
      return fail(std::string(key) + " must be in " + (lo_open ? "(" : "[") + fmt(lo) + ", " +
                      fmt(hi) + "], got " + fmt(value),
                  key);
    }
    out = static_cast<float>(value);
    return true;
  }

  static std::string fmt(double value) {
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    std::string s = std::to_string(value);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  /// Integers may arrive as 5 or 5.0; booleans are not integers.
  static bool as_integer(const json& v, int64_t& out) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      out = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                ? std::numeric_limits<int64_t>::max()
                : static_cast<int64_t>(u);
      return true;
    }
    if (v.is_number_integer()) return out = v.get<int64_t>(), true;
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::floor(d) != d || std::fabs(d) > 9.0e18) return false;
      out = static_cast<int64_t>(d);
      return true;
    }
    return false;
  }
};

constexpr int64_t max_int32 = std::numeric_limits<int32_t>::max();

/// A list of token ids, each a non-negative 32-bit integer.
bool read_token_ids(const json& list, std::vector<int32_t>& out) {
  out.clear();
  out.reserve(list.size());
  for (const auto& v : list) {
    int64_t id = 0;
    if (!field_reader::as_integer(v, id) || id < 0 || id > max_int32) return false;
    out.push_back(static_cast<int32_t>(id));
  }
  return true;
}

/// The sampling fields of a completions or chat body into base.params; for completions also
/// echo (with logprobs, the prompt's own logprobs lead the answer's).
bool read_sampling(field_reader& r, api_kind kind, generate_request& base) {
  // Types here; the bounds are check_sampling's (common/sampling_contract.hpp), below.
  constexpr double any = std::numeric_limits<double>::infinity();
  sampling_params& p = base.params;
  r.read_int("n", p.n, -max_int32, max_int32);
  r.read_float("temperature", p.temperature, -any, any);
  r.read_float("top_p", p.top_p, -any, any);
  r.read_int("top_k", p.top_k, -max_int32, max_int32);
  r.read_float("min_p", p.min_p, -any, any);
  r.read_float("presence_penalty", p.presence_penalty, -any, any);
  r.read_float("frequency_penalty", p.frequency_penalty, -any, any);
  r.read_float("repetition_penalty", p.repetition_penalty, -any, any);
  r.read_bool("ignore_eos", p.ignore_eos);
  // vLLM's extension: lower runs first under --scheduling-policy priority.
  r.read_int("priority", p.priority, -max_int32, max_int32);
  r.read_bool("skip_special_tokens", p.skip_special_tokens);
  if (const json* v = r.find("seed")) {
    int64_t seed = 0;
    if (v->is_number_unsigned()) {
      p.seed = v->get<uint64_t>();  // all 64 bits: seeds above 2^63 must not collide
    } else if (!field_reader::as_integer(*v, seed)) {
      return r.fail("seed must be an integer", "seed");
    } else {
      p.seed = static_cast<uint64_t>(seed);
    }
  }

  // Chat: no max_tokens means "until the context is full"; max_completion_tokens wins.
  if (kind == api_kind::chat) p.max_tokens = -1;
  r.read_int("max_tokens", p.max_tokens, kind == api_kind::completion ? 0 : 1, max_int32);
  if (kind == api_kind::chat) r.read_int("max_completion_tokens", p.max_tokens, 1, max_int32);
  if (kind == api_kind::completion) r.read_bool("echo", base.echo);
  if (kind == api_kind::completion && p.max_tokens == 0) {
    // vLLM's echo without generation: the prompt alone, scored (lm-evaluation-harness).
    if (!base.echo)
      return r.fail("max_tokens must be at least 1; 0 only with echo, to return the prompt",
                    "max_tokens");
    base.echo_without_generation = true;
    p.max_tokens = 1;
  }
  r.read_int("min_tokens", p.min_tokens, -max_int32, max_int32);

  if (const json* v = r.find("stop")) {
    if (v->is_string()) {
      if (!v->get_ref<const std::string&>().empty()) p.stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      for (const auto& s : *v) {
        if (!s.is_string()) return r.fail("stop must be a string or a list of strings", "stop");
        if (!s.get_ref<const std::string&>().empty()) p.stop.push_back(s.get<std::string>());
      }
    } else {
      return r.fail("stop must be a string or a list of strings", "stop");
    }
  }
  r.read_bool("include_stop_str_in_output", p.include_stop_str_in_output);
  r.read_int("truncate_prompt_tokens", p.truncate_prompt_tokens, -1, max_int32);
  if (p.truncate_prompt_tokens == 0 && r.find("truncate_prompt_tokens"))
    return r.fail("truncate_prompt_tokens must be at least 1, or -1 for max_model_len",
                  "truncate_prompt_tokens");
  if (const json* v = r.find("stop_token_ids")) {
    if (!v->is_array() || !read_token_ids(*v, p.stop_token_ids)) {
      return r.fail("stop_token_ids must be a list of token ids", "stop_token_ids");
    }
  }
  if (const json* v = r.find("logit_bias")) {
    if (!v->is_object()) return r.fail("logit_bias must be an object", "logit_bias");
    for (const auto& [key, bias] : v->items()) {
      // Digits only: strtoll alone would take " 5", "+5" and "05 " as token 5.
      const bool digits =
          !key.empty() && key.size() <= 10 &&
          std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      const long long id = digits ? std::strtoll(key.c_str(), nullptr, 10) : -1;
      if (id < 0 || id > max_int32) {
        return r.fail("logit_bias keys must be token ids, got '" + key + "'", "logit_bias");
      }
      // The value's bounds are the contract's; a number past float's range is out of them.
      if (!bias.is_number()) {
        return r.fail("logit_bias values must be numbers in [-100, 100]", "logit_bias");
      }
      const double value = std::clamp(bias.get<double>(), -1.0e9, 1.0e9);
      p.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(value));
    }
  }

  // Completions: logprobs is the number of alternatives. Chat: a boolean plus top_logprobs.
  if (kind == api_kind::completion) {
    r.read_int("logprobs", p.logprobs, 0, max_logprobs_bound);
  } else {
    bool want = false;
    int32_t top = -1;
    r.read_bool("logprobs", want);
    r.read_int("top_logprobs", top, 0, max_logprobs_bound);
    if (top >= 0 && !want) {
      return r.fail("top_logprobs requires logprobs to be true", "top_logprobs");
    }
    if (want) p.logprobs = top < 0 ? 0 : top;
  }
  // vLLM's beam search: n beams, the best n of them the answer's choices.
  r.read_bool("use_beam_search", p.beam.enabled);
  r.read_float("length_penalty", p.beam.length_penalty, -any, any);
  r.read_bool("early_stopping", p.beam.early_stopping);
  // vLLM's prompt_logprobs (both APIs); with echo, completions' logprobs cover the prompt too.
  r.read_int("prompt_logprobs", p.prompt_logprobs, 0, max_logprobs_bound);
  if (base.echo && p.logprobs >= 0) p.prompt_logprobs = std::max(p.prompt_logprobs, p.logprobs);
  if (r.error) return false;
  if (auto broken = check_sampling(p)) return r.fail(broken->message, broken->param.c_str());
  return true;
}

/// Completions prompt: a string, a list of strings, token ids, or a list of token id lists.
bool read_prompts(field_reader& r, const generate_request& base,
                  std::vector<generate_request>& out) {
  const json* v = r.find("prompt");
  if (!v) return r.fail("prompt is required", "prompt");
  auto add_text = [&](const std::string& text) {
    out.push_back(base);
    out.back().kind = prompt_kind::text;
    out.back().text = text;
  };
  auto add_ids = [&](const json& ids) {
    out.push_back(base);
    out.back().kind = prompt_kind::token_ids;
    return !ids.empty() && read_token_ids(ids, out.back().token_ids);
  };
  const char* shape =
      "prompt must be a string, a list of strings, a list of token ids or a "
      "list of token id lists";
  if (v->is_string()) return add_text(v->get<std::string>()), true;
  if (!v->is_array() || v->empty()) return r.fail(shape, "prompt");
  const json& first = v->front();
  if (first.is_string()) {
    for (const auto& p : *v) {
      if (!p.is_string()) return r.fail(shape, "prompt");
      add_text(p.get<std::string>());
    }
    return true;
  }
  if (first.is_array()) {
    for (const auto& p : *v) {
      if (!p.is_array() || !add_ids(p)) return r.fail(shape, "prompt");
    }
    return true;
  }
  if (!add_ids(*v)) return r.fail(shape, "prompt");
  return true;
}

/// Chat messages are passed on as JSON, their lists of content parts read by chat_content.hpp
/// (text joined into one string, or, in a request with images, kept as parts).
/// An assistant message's tool_calls carry their arguments as JSON text (OpenAI's shape);
/// chat templates read them as a mapping (`arguments | tojson`, `arguments.items()`), so, as
/// vLLM does, the text is handed to the template parsed (empty text: no arguments). Text that
/// is not a JSON object is refused: the template would render something the model never
/// wrote. Returns the fault, or "".
std::string parse_tool_call_arguments(json& message) {
  auto calls = message.find("tool_calls");
  if (calls == message.end() || !calls->is_array()) return "";
  for (json& call : *calls) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
    json& function = call["function"];
    auto arguments = function.find("arguments");
    if (arguments == function.end() || !arguments->is_string()) continue;
    const std::string& text = arguments->get_ref<const std::string&>();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      *arguments = json::object();
      continue;
    }
    // A number the model wrote past double's range stays as its text (json_numbers.hpp).
    json parsed = parse_keeping_huge_numbers(text);
    if (!parsed.is_object())
      return "a tool call's function.arguments must be a JSON object as text, got '" +
             text.substr(0, 64) + (text.size() > 64 ? "...'" : "'");
    *arguments = std::move(parsed);
  }
  return "";
}

bool read_messages(field_reader& r, json& chat, std::vector<std::string>& image_urls) {
  const json* v = r.find("messages");
  if (!v || !v->is_array() || v->empty()) {
    return r.fail("messages must be a non-empty list of messages", "messages");
  }
  const bool has_images = std::any_of(v->begin(), v->end(), [](const json& m) {
    return m.is_object() && m.contains("content") && has_image_part(m["content"]);
  });
  image_urls.clear();
  json messages = json::array();
  for (const auto& m : *v) {
    if (!m.is_object()) return r.fail("each message must be an object", "messages");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string() || role->get_ref<const std::string&>().empty()) {
      return r.fail("each message needs a string role", "messages");
    }
    json message = m;
    auto content = m.find("content");
    if (content != m.end() && content->is_array()) {
      std::string fault = read_content_parts(*content, has_images, message["content"], image_urls);
      if (!fault.empty()) return r.fail(std::move(fault), "messages");
    } else if (content != m.end() && !content->is_string() && !content->is_null()) {
      return r.fail("message content must be a string, a list of parts or null", "messages");
    }
    if (std::string fault = parse_tool_call_arguments(message); !fault.empty())
      return r.fail(std::move(fault), "messages");
    messages.push_back(std::move(message));
  }
  chat = json::object();
  chat["messages"] = std::move(messages);
  if (const json* tools = r.find("tools")) {
    if (!tools->is_array()) return r.fail("tools must be a list", "tools");
    chat["tools"] = *tools;
  }
  // vLLM's extra template variables (enable_thinking, ...), beside messages and tools.
  if (const json* kwargs = r.find("chat_template_kwargs")) {
    if (!kwargs->is_object())
      return r.fail("chat_template_kwargs must be an object", "chat_template_kwargs");
    for (const auto& [key, value] : kwargs->items()) {
      if (key == "messages" || key == "tools" || key == "add_generation_prompt")
        return r.fail("chat_template_kwargs cannot set " + key + "; use the request's own field",
                      "chat_template_kwargs");
      chat[key] = value;
    }
  }
  return true;
}

}  // namespace

int json_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  json_string_scan scan;
  for (char c : text) {
    if (scan.step(c)) continue;
    if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

namespace {

template <class object_json>
const object_json* find_given(const object_json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

const json* given_field(const json& object, const char* key) {
  return find_given(object, key);
}

const nlohmann::ordered_json* given_field(const nlohmann::ordered_json& object, const char* key) {
  return find_given(object, key);
}

std::optional<api_error> parse_json_object(std::string_view body, json& out) {
  if (json_depth(body) > max_json_depth) return bad_request("JSON nested too deeply");
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return bad_request("the body is not valid JSON");
  if (!out.is_object()) return bad_request("the body must be a JSON object");
  return std::nullopt;
}

std::optional<api_error> parse_openai_request(std::string_view body, api_kind kind,
                                              openai_request& out,
                                              const sampling_defaults& defaults,
                                              const tool_settings& tools) {
  json parsed;
  if (auto error = parse_json_object(body, parsed)) return error;
  return parse_openai_json(parsed, kind, out, defaults, body, tools);
}

std::optional<api_error> parse_openai_json(const json& body, api_kind kind, openai_request& out,
                                           const sampling_defaults& defaults,
                                           std::string_view raw_body, const tool_settings& tools) {
  if (!body.is_object()) return bad_request("the request must be a JSON object");
  if (auto refused = refuse_unsupported_fields(body)) return refused;
  field_reader r{body, std::nullopt};
  out = openai_request{};
  out.kind = kind;
  if (const json* v = r.find("model")) {
    if (!v->is_string()) return bad_request("model must be a string", "model");
    out.model = v->get<std::string>();
  }
  if (const json* v = r.find("user"); v && !v->is_string()) {
    return bad_request("user must be a string", "user");
  }
  std::string session;  // the conversation's key for the router (generate_request::session)
  for (const char* key : {"user", "session_id"}) {
    const json* v = r.find(key);
    if (!v) continue;
    if (!v->is_string()) return bad_request(std::string(key) + " must be a string", key);
    if (v->get_ref<const std::string&>().size() > 256)
      return bad_request(std::string(key) + " is longer than 256 bytes", key);
    session = v->get<std::string>();
  }
  r.read_bool("stream", out.stream);
  if (const json* v = r.find("stream_options")) {
    if (!v->is_object()) return bad_request("stream_options must be an object", "stream_options");
    if (!out.stream) {
      return bad_request("stream_options is only allowed when stream is true", "stream_options");
    }
    field_reader options{*v, std::nullopt};
    options.read_bool("include_usage", out.include_usage);
    options.read_bool("continuous_usage_stats", out.continuous_usage_stats);
    if (options.error) return options.error;
  }

  generate_request base;
  base.session = std::move(session);
  defaults.apply(base.params);
  if (!read_sampling(r, kind, base)) return r.error;
  if (auto error = read_structured_output(body, raw_body, base.params.structured)) return error;
  if (kind == api_kind::chat) {
    if (auto error = read_tool_fields(body, raw_body, tools, out.tools, base.params.structured))
      return error;
    // [TOOL_CALLS] is a special token in Mistral's vocabularies: the parser must see it, so
    // such requests keep special tokens in their text, as vLLM arranges.
    if (out.tools.mode == tool_mode::parse && tools.tool_call_parser == "mistral")
      base.params.skip_special_tokens = false;
  }
  out.n = base.params.n;
  out.prompt_logprobs = given_field(body, "prompt_logprobs") != nullptr;
  if (base.params.beam.enabled) {
    // vLLM answers a beam search whole: the beams are ranked only once the search is over.
    if (out.stream) return bad_request("beam search does not stream; ask without stream", "stream");
    if (auto broken = check_sampling(base.params))
      return bad_request(broken->message, broken->param);
  }
  if (kind == api_kind::completion) {
    r.read_bool("add_special_tokens", base.add_special_tokens);
    if (r.error || !read_prompts(r, base, out.prompts)) return r.error;
  } else {
    base.kind = prompt_kind::chat;
    base.add_special_tokens = false;  // the chat template writes its own special tokens
    r.read_bool("add_generation_prompt", base.add_generation_prompt);
    json chat;
    if (r.error || !read_messages(r, chat, base.image_urls)) return r.error;
    base.chat_json = chat.dump(-1, ' ', false, json::error_handler_t::replace);
    out.prompts.push_back(std::move(base));
  }
  return r.error;
}

std::optional<api_error> parse_tokenize_request(std::string_view body, generate_request& out) {
  json parsed;
  if (auto error = parse_json_object(body, parsed)) return error;
  field_reader r{parsed, std::nullopt};
  out = generate_request{};
  if (const json* v = r.find("model"); v && v->is_string()) out.model = v->get<std::string>();
  if (r.find("messages")) {
    out.kind = prompt_kind::chat;
    out.add_special_tokens = false;
    r.read_bool("add_generation_prompt", out.add_generation_prompt);
    r.read_bool("add_special_tokens", out.add_special_tokens);
    json chat;
    if (r.error || !read_messages(r, chat, out.image_urls)) return r.error;
    out.chat_json = chat.dump(-1, ' ', false, json::error_handler_t::replace);
    return std::nullopt;
  }
  const json* prompt = r.find("prompt");
  if (!prompt || !prompt->is_string()) {
    return bad_request("give prompt (a string) or messages (a list)", "prompt");
  }
  out.kind = prompt_kind::text;
  out.text = prompt->get<std::string>();
  r.read_bool("add_special_tokens", out.add_special_tokens);
  return r.error;
}

std::optional<api_error> parse_detokenize_request(std::string_view body, detokenize_request& out) {
  json parsed;
  if (auto error = parse_json_object(body, parsed)) return error;
  auto it = parsed.find("tokens");
  if (it == parsed.end() || !it->is_array() || !read_token_ids(*it, out.tokens)) {
    return bad_request("tokens must be a list of token ids", "tokens");
  }
  if (auto model = parsed.find("model"); model != parsed.end() && !model->is_null()) {
    if (!model->is_string()) return bad_request("model must be a string", "model");
    out.model = model->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace actorllm::api
