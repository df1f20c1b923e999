// Admission of a call and the start of its engine requests.
#include "api/admission.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "api/anthropic_protocol.hpp"
#include "api/chat_content.hpp"
#include "api/ids.hpp"
#include "api/model_directory.hpp"
#include "api/response_store.hpp"
#include "api/responses_protocol.hpp"

namespace actorllm::api {
namespace {

model_info model_for_body(const server_context& context, std::string_view body) {
  return model_for_name(context, context.engine.num_models() > 1 ? model_named_in(body) : "");
}

/// A 503 for a model that is listed but not loaded, naming its state (and why it failed).
api_error not_loaded(const model_listing& model) {
  api_error error = engine_error(model_refusal(model), 503);
  error.code = "model_not_loaded";
  error.param = "model";
  return error;
}

}  // namespace

std::string model_named_in(std::string_view body) {
  using json = nlohmann::json;
  std::string name;
  bool after_model_key = false;  // a value event does not say whose value it is
  json::parser_callback_t keep_model = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth != 1) return depth == 0;
    if (event == json::parse_event_t::key) {
      after_model_key = parsed == "model";
      return after_model_key;
    }
    if (event == json::parse_event_t::value && after_model_key && parsed.is_string())
      name = parsed.get<std::string>();
    after_model_key = false;
    return false;
  };
  const json kept = json::parse(body, keep_model, false);  // only `name` is wanted
  static_cast<void>(kept);
  return name;
}

model_info model_for_name(const server_context& context, std::string_view requested) {
  if (context.engine.num_models() > 1)
    if (auto found = context.engine.find_model(requested)) return found->info;
  return context.engine.model();
}

bool waits_for_model(const server_context& context, std::string_view body) {
  if (context.engine.num_models() <= 1) return false;
  const auto found = context.engine.find_model(model_named_in(body));
  return found && found->state != model_state::loaded && found->state != model_state::failed;
}

sampling_defaults sampling_defaults_for(const server_context& context, std::string_view requested) {
  if (auto found = context.engine.find_model(requested)) return found->info.sampling;
  return context.engine.model().sampling;
}

std::optional<api_error> check_request_size(const openai_request& request, int32_t max_model_len,
                                            int32_t max_waiting_requests) {
  const int64_t num_prompts = static_cast<int64_t>(request.prompts.size());
  if (num_prompts > max_prompts_per_request)
    return bad_request("a request may carry at most " + std::to_string(max_prompts_per_request) +
                           " prompts; this one has " + std::to_string(num_prompts),
                       "prompt");
  const int64_t num_choices = num_prompts * request.n;
  if (max_waiting_requests > 0 && num_choices > max_waiting_requests)
    return bad_request("this request needs " + std::to_string(num_choices) +
                           " sequences (prompts x n), more than the server ever queues (" +
                           std::to_string(max_waiting_requests) + "): it could never be admitted",
                       request.n > 1 ? "n" : "prompt");
  // The size of an answer with logprobs: every choice's tokens, each with its alternatives
  // (a token of plain text costs a few bytes; one with logprobs an object per alternative).
  int64_t entries = 0;
  for (const auto& prompt : request.prompts) {
    const int64_t tokens = prompt.params.max_tokens > 0 ? prompt.params.max_tokens : max_model_len;
    if (prompt.params.logprobs >= 0)
      entries += int64_t{request.n} * tokens * (1 + prompt.params.logprobs);
    // The prompt's, in every choice: each prompt token with its alternatives and itself. A
    // text has at most a token per byte (and the special tokens around it).
    if (prompt.params.prompt_logprobs >= 0) {
      int64_t prompt_tokens = max_model_len;
      if (prompt.kind == prompt_kind::token_ids)
        prompt_tokens = static_cast<int64_t>(prompt.token_ids.size());
      else if (prompt.kind == prompt_kind::text)
        prompt_tokens =
            std::min<int64_t>(max_model_len, 2 + static_cast<int64_t>(prompt.text.size()));
      entries += int64_t{request.n} * prompt_tokens * (2 + prompt.params.prompt_logprobs);
    }
  }
  if (entries > max_output_entries)
    return bad_request("this request may produce " + std::to_string(entries) +
                           " tokens and logprob alternatives (prompts x n x (max_tokens x "
                           "(1 + logprobs) + prompt tokens x (2 + prompt_logprobs))), more than "
                           "the " +
                           std::to_string(max_output_entries) +
                           " one answer may hold; lower max_tokens, n or logprobs",
                       "max_tokens");
  return std::nullopt;
}

std::optional<api_error> admit(server_context& context, const openai_request& request,
                               model_info& model) {
  auto found = context.engine.find_model(request.model);
  if (!found) {
    api_error error =
        not_found("The model `" + request.model + "` does not exist.", "model_not_found");
    error.param = "model";
    return error;
  }
  if (!admits_requests(*found)) return not_loaded(*found);
  model = std::move(found->info);
  if (auto too_much =
          check_request_size(request, model.max_model_len, context.max_waiting_requests)) {
    return too_much;
  }
  const std::string images_param = request.kind == api_kind::responses ? "input" : "messages";
  for (const auto& prompt : request.prompts)
    if (auto too_many = check_image_limits(prompt, context.config.max_images_per_prompt,
                                           context.config.media, images_param))
      return too_many;
  if (!context.engine.healthy()) {
    return engine_error("the engine is not ready; retry later", 503);
  }
  const int32_t limit = context.max_waiting_requests;
  if (limit > 0 && context.engine.num_waiting() >= static_cast<std::size_t>(limit)) {
    return engine_error(
        "the server is overloaded (" + std::to_string(limit) + " requests waiting); retry later",
        503);
  }
  return std::nullopt;
}

std::optional<api_error> admit_call(server_context& context, api_kind kind, std::string_view body,
                                    openai_request& out, model_info& model) {
  const model_info named = model_for_body(context, body);
  if (named.embeddings) {
    // A pooling model generates nothing (vLLM refuses generation on it by name, too).
    const char* api = kind == api_kind::chat        ? "Chat Completions"
                      : kind == api_kind::responses ? "Responses"
                      : kind == api_kind::messages  ? "Messages"
                                                    : "Completions";
    return bad_request(std::string("The model does not support the ") + api +
                       " API: this server runs --task embed; use /v1/embeddings");
  }
  const sampling_defaults defaults = named.sampling;
  const response_lookup lookup = [&context](std::string_view id) {
    return context.responses ? context.responses->get(id) : std::nullopt;
  };
  const tool_settings tools = context.tools_of(named);
  if (auto error =
          kind == api_kind::responses  ? parse_responses_request(body, out, defaults, tools, lookup)
          : kind == api_kind::messages ? parse_messages_request(body, out, defaults, tools)
                                       : parse_openai_request(body, kind, out, defaults, tools))
    return error;
  return admit(context, out, model);
}

std::optional<api_error> admit_embeddings(server_context& context, std::string_view body,
                                          embeddings_request& out, model_info& model) {
  model = model_for_body(context, body);
  if (auto found = context.engine.find_model(model.name); found && !admits_requests(*found))
    return not_loaded(*found);
  if (auto error = parse_embeddings_request(body, model, out)) return error;
  const int32_t limit = context.max_waiting_requests;
  if (limit > 0 && context.engine.num_waiting() + out.inputs.size() > size_t(limit))
    return engine_error("too many requests are waiting; try again later", 503);
  return std::nullopt;
}

std::optional<api_error> admit_tokenize(server_context& context, std::string_view body,
                                        generate_request& out, bool count_tokens) {
  if (auto error =
          count_tokens ? parse_count_tokens_request(body, out) : parse_tokenize_request(body, out))
    return error;
  const auto found = context.engine.find_model(out.model);
  if (!found) return not_found("The model `" + out.model + "` does not exist.", "model_not_found");
  if (!admits_requests(*found)) return not_loaded(*found);
  out.model = found->info.name;  // the engine knows the model by its served name only
  return check_image_limits(out, context.config.max_images_per_prompt, context.config.media,
                            "messages");
}

std::optional<api_error> admit_detokenize(server_context& context, std::string_view body,
                                          detokenize_request& out) {
  if (auto error = parse_detokenize_request(body, out)) return error;
  const auto found = context.engine.find_model(out.model);
  if (!found) return not_found("The model `" + out.model + "` does not exist.", "model_not_found");
  if (!admits_requests(*found)) return not_loaded(*found);
  out.model = found->info.name;
  return std::nullopt;
}

std::unique_ptr<openai_call> start_call(server_context& context, openai_request request,
                                        const model_info& model, std::string display_id,
                                        std::function<void(request_output)> sink,
                                        bool error_chunk) {
  const bool chat = request.kind != api_kind::completion;
  const output_parsers parsers = context.parsers_of(model);
  // A response id reads its stored response back: it must not be guessable from others.
  const std::string base = request.kind == api_kind::responses  ? unguessable_id("resp_")
                           : request.kind == api_kind::messages ? random_id("msg_")
                           : chat                               ? random_id("chatcmpl-")
                                                                : random_id("cmpl-");
  std::vector<std::string> engine_ids;
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    engine_ids.push_back(request.prompts.size() == 1 ? base : base + "-" + std::to_string(p));
  }
  call_options options;
  options.kind = request.kind;
  options.id = display_id.empty() ? base : std::move(display_id);
  options.model = request.model.empty() ? model.name : request.model;  // echoed, as vLLM does
  options.created = unix_now();
  options.n = request.n;
  options.stream = request.stream;
  // --enable-force-include-usage: every stream ends with its usage, asked for or not.
  options.include_usage = request.include_usage || context.config.force_include_usage;
  options.continuous_usage = options.include_usage && request.continuous_usage_stats;
  options.error_chunk = error_chunk;
  options.logprobs = !request.prompts.empty() && request.prompts.front().params.logprobs >= 0;
  if (!request.prompts.empty()) {
    const generate_request& first = request.prompts.front();
    options.echo_logprobs = first.echo && first.params.logprobs >= 0;
    options.prompt_logprobs = request.prompt_logprobs;
  }
  options.system_fingerprint = system_fingerprint();
  options.thinking = request.thinking;
  options.responses = request.responses;
  if (chat) {
    options.chat.tools = request.tools;
    options.chat.tool_call_parser = parsers.tool_call_parser;
    options.chat.reasoning_parser = parsers.reasoning_parser;
    options.chat.role = context.config.response_role;
  }
  auto call = std::make_unique<openai_call>(std::move(options), engine_ids);
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    generate_request& prompt = request.prompts[p];
    prompt.request_id = engine_ids[p];
    // The thinking is free; the constraint holds the answer after it (as vLLM does).
    if (chat && !parsers.reasoning_parser.empty())
      prompt.params.structured.after_reasoning = prompt.params.structured.active();
    prompt.model = model.engine_name(request.model);
    try {
      context.engine.submit(std::move(prompt), sink);
    } catch (...) {
      for (std::size_t q = 0; q < p; ++q) context.engine.abort(engine_ids[q]);
      throw;
    }
  }
  return call;
}

void abort_call(server_context& context, const openai_call& call) {
  if (call.done() && !call.failed()) return;
  for (const auto& id : call.engine_ids()) context.engine.abort(id);
}

}  // namespace actorllm::api
