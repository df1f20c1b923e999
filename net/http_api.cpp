// Routing, authentication, CORS and the bodies of the small endpoints.
#include "net/http_api.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "net/openai_call.hpp"

#ifndef ACTORLLM_VERSION
#define ACTORLLM_VERSION "0.0.0"
#endif

namespace actorllm::net {
namespace {

using json = nlohmann::json;

route make(endpoint target, std::string_view method, const char* allowed) {
  route r;
  r.target = target;
  r.allow = allowed;
  // allowed is a comma-separated list such as "GET" or "POST".
  for (std::string_view rest = allowed; !rest.empty();) {
    const auto comma = rest.find(", ");
    if (rest.substr(0, comma) == method) r.method_allowed = true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  return r;
}

/// Whether `authorization` is "Bearer <key>", comparing every byte whatever the first
/// difference, so that timing does not leak the key. An empty key matches nothing.
bool bearer_matches(const std::string& key, std::string_view authorization) {
  if (key.empty()) return false;
  // The scheme is case-insensitive (RFC 9110 11.1); the token is not.
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() < scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return false;
  const std::string_view given = authorization.substr(scheme.size());
  unsigned diff = given.size() != key.size();
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(key[i % key.size()]);
  }
  return diff == 0;
}

/// The path without its query string and without one trailing slash.
std::string_view path_of(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  return path;
}

json model_object(const model_info& model) {
  return {{"id", model.name},
          {"object", "model"},
          {"created", model.created},
          {"owned_by", "actorllm"},
          {"root", model.root.empty() ? model.name : model.root},
          {"parent", nullptr},
          {"max_model_len", model.max_model_len},
          {"permission", json::array()}};
}

/// A LoRA adapter as vLLM lists it: its folder as root, the base model as parent.
json adapter_object(const model_info& model, const adapter_info& adapter) {
  json object = model_object(model);
  object["id"] = adapter.name;
  object["root"] = adapter.path;
  object["parent"] = model.name;
  return object;
}

}  // namespace

route find_route(std::string_view method, std::string_view target) {
  const std::string_view path = path_of(target);
  if (path == "/v1/completions") return make(endpoint::completions, method, "POST");
  if (path == "/v1/chat/completions") return make(endpoint::chat_completions, method, "POST");
  if (path == "/v1/responses") return make(endpoint::responses, method, "POST");
  if (path == "/v1/embeddings") return make(endpoint::embeddings, method, "POST");
  if (path == "/v1/models") return make(endpoint::models, method, "GET, HEAD");
  if (path == "/v1/load_lora_adapter") return make(endpoint::load_lora_adapter, method, "POST");
  if (path == "/v1/unload_lora_adapter") return make(endpoint::unload_lora_adapter, method, "POST");
  if (path.starts_with("/v1/models/")) {
    route r = make(endpoint::model, method, "GET, HEAD");
    r.model_id = std::string(path.substr(std::string_view("/v1/models/").size()));
    return r;
  }
  if (path == "/tokenize") return make(endpoint::tokenize, method, "POST");
  if (path == "/detokenize") return make(endpoint::detokenize, method, "POST");
  if (path == "/health") return make(endpoint::health, method, "GET, HEAD");
  // vLLM's alias of /health for SageMaker-style load balancers, which probe with POST too.
  if (path == "/ping") return make(endpoint::health, method, "GET, HEAD, POST");
  if (path == "/version") return make(endpoint::version, method, "GET, HEAD");
  if (path == "/metrics") return make(endpoint::metrics, method, "GET, HEAD");
  if (path == "/v1/ws") return make(endpoint::websocket, method, "GET");
  if (path == "/v1/engine/stats") return make(endpoint::engine_stats, method, "GET, HEAD");
  if (path == "/" || path == "/index.html") {
    route r = make(endpoint::web_page, method, "GET, HEAD");
    r.asset = "index.html";
    return r;
  }
  constexpr std::string_view ui = "/ui/";
  if (path.starts_with(ui)) {
    route r = make(endpoint::web_asset, method, "GET, HEAD");
    r.asset = std::string(path.substr(ui.size()));
    r.pattern = "/ui/{name}";
    return r;
  }
  if (path == "/admin/replicas") return make(endpoint::admin_replicas, method, "GET, POST");
  constexpr std::string_view replicas = "/admin/replicas/";
  if (path.starts_with(replicas)) {
    // {id} or {id}/drain; the id is judged by the handler (400), after the key is checked.
    std::string_view id = path.substr(replicas.size());
    const bool drain = id.ends_with("/drain");
    if (drain) id.remove_suffix(std::string_view("/drain").size());
    if (id.empty() || id.find('/') != std::string_view::npos) return route{};
    route r = drain ? make(endpoint::admin_drain, method, "POST")
                    : make(endpoint::admin_replica, method, "DELETE");
    r.replica_id = std::string(id);
    r.pattern = drain ? "/admin/replicas/{id}/drain" : "/admin/replicas/{id}";
    return r;
  }
  return route{};
}

bool needs_api_key(endpoint target) {
  switch (target) {
    case endpoint::health:
    case endpoint::version:
    case endpoint::metrics:
    case endpoint::web_page:
    case endpoint::web_asset:
      return false;
    default:
      return true;
  }
}

bool authorized(const server_config& config, std::string_view authorization) {
  return config.api_key.empty() || bearer_matches(config.api_key, authorization);
}

namespace {

/// Calls `each` with every comma-separated, space-trimmed entry of `list`.
template <class F>
void for_each_entry(std::string_view list, F each) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    each(entry);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
}

}  // namespace

std::string websocket_authorization(std::string_view offered_protocols) {
  std::string authorization;
  for_each_entry(offered_protocols, [&](std::string_view entry) {
    constexpr std::string_view prefix = "bearer.";
    if (authorization.empty() && entry.size() > prefix.size() && entry.starts_with(prefix))
      authorization = "Bearer " + std::string(entry.substr(prefix.size()));
  });
  return authorization;
}

bool offers_actorllm_protocol(std::string_view offered_protocols) {
  bool offered = false;
  for_each_entry(offered_protocols,
                 [&](std::string_view entry) { offered |= entry == "actorllm"; });
  return offered;
}

bool is_admin_path(std::string_view target) {
  const std::string_view path = path_of(target);
  return path == "/admin" || path.starts_with("/admin/");
}

bool admin_authorized(const server_config& config, std::string_view authorization) {
  return bearer_matches(config.admin_api_key, authorization);
}

std::string cors_allow_origin(const server_config& config, std::string_view origin) {
  for (const auto& allowed : config.allowed_origins) {
    if (allowed == "*") return "*";
    if (!origin.empty() && allowed == origin) return std::string(origin);
  }
  return {};
}

bool origin_allowed(const server_config& config, std::string_view origin, std::string_view host) {
  if (!cors_allow_origin(config, origin).empty()) return true;
  for (std::string_view scheme : {"http://", "https://"})
    if (!host.empty() && origin.size() == scheme.size() + host.size() &&
        origin.starts_with(scheme) && origin.substr(scheme.size()) == host)
      return true;
  return false;
}

namespace {

std::string lowercase(std::string_view text) {
  std::string out;
  for (char c : text) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

bool host_allowed(const server_config& config, std::string_view host) {
  for (const auto& allowed : config.allowed_hosts)
    if (allowed == "*") return true;
  if (host.starts_with('[')) {
    // An IPv6 literal, with or without a port after the bracket.
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() &&
        (!rest.starts_with(':') || !std::all_of(rest.begin() + 1, rest.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        })))
      return false;
    in6_addr v6{};
    return inet_pton(AF_INET6, std::string(host.substr(1, close - 1)).c_str(), &v6) == 1;
  }
  const size_t colon = host.rfind(':');
  std::string name = lowercase(colon == std::string_view::npos ? host : host.substr(0, colon));
  if (name.ends_with('.')) name.pop_back();
  if (name.empty()) return false;
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) return true;
  if (name == "localhost" || name.ends_with(".localhost")) return true;
  for (const auto& allowed : config.allowed_hosts) {
    std::string entry = lowercase(allowed);
    if (entry.ends_with('.')) entry.pop_back();
    if (entry == name) return true;
  }
  return false;
}

bool is_json_content_type(std::string_view content_type) {
  std::string type;
  for (char c : content_type.substr(0, content_type.find(';')))
    if (c != ' ' && c != '\t')
      type.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return type == "application/json" ||
         (type.starts_with("application/") && type.ends_with("+json"));
}

std::string random_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string id(prefix);
  for (int half = 0; half < 2; ++half) {
    uint64_t bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) id.push_back(digits[bits & 15]);
  }
  return id;
}

std::string request_id_for(std::string_view header) {
  bool sane = !header.empty() && header.size() <= 128;
  for (char c : header) sane = sane && c > 32 && c < 127;
  return sane ? std::string(header) : random_id("");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string models_json(const model_info& model) {
  json data = json::array({model_object(model)});
  for (const auto& adapter : model.adapters) data.push_back(adapter_object(model, adapter));
  return to_wire({{"object", "list"}, {"data", std::move(data)}});
}

std::string model_json(const model_info& model, std::string_view id) {
  if (const adapter_info* adapter = model.find_adapter(id))
    return to_wire(adapter_object(model, *adapter));
  return to_wire(model_object(model));
}

std::string version_json() {
  return to_wire({{"version", ACTORLLM_VERSION}});
}

std::string tokenize_json(const tokenize_result& result) {
  json body = {{"count", result.tokens.size()},
               {"max_model_len", result.max_model_len},
               {"tokens", result.tokens}};
  if (!result.token_strs.empty()) body["token_strs"] = result.token_strs;
  return to_wire(body);
}

std::string detokenize_json(const detokenize_result& result) {
  return to_wire({{"prompt", result.text}});
}

void log_access(std::string_view peer, std::string_view method, std::string_view target, int status,
                double millis, std::string_view request_id) {
  char line[512];
  const int n = std::snprintf(
      line, sizeof line, "%.*s \"%.*s %.*s\" %d %.1fms %.*s\n", static_cast<int>(peer.size()),
      peer.data(), static_cast<int>(method.size()), method.data(),
      static_cast<int>(std::min<std::size_t>(target.size(), 200)), target.data(), status, millis,
      static_cast<int>(std::min<std::size_t>(request_id.size(), 128)), request_id.data());
  if (n > 0) std::fwrite(line, 1, std::min<std::size_t>(n, sizeof line - 1), stderr);
}

}  // namespace actorllm::net

namespace actorllm::net {

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
    if (prompt.params.logprobs < 0) continue;
    const int64_t tokens = prompt.params.max_tokens > 0 ? prompt.params.max_tokens : max_model_len;
    entries += int64_t{request.n} * tokens * (1 + std::max(0, prompt.params.logprobs));
  }
  if (entries > max_output_entries)
    return bad_request("this request may produce " + std::to_string(entries) +
                           " tokens and logprob alternatives (prompts x n x max_tokens x "
                           "(1 + logprobs)), more than the " +
                           std::to_string(max_output_entries) +
                           " one answer may hold; lower max_tokens, n or logprobs",
                       "max_tokens");
  return std::nullopt;
}

std::optional<api_error> admit(server_context& context, const openai_request& request,
                               model_info& model) {
  model = context.engine.model();
  if (!request.model.empty() && !model.answers_to(request.model)) {
    api_error error =
        not_found("The model `" + request.model + "` does not exist.", "model_not_found");
    error.param = "model";
    return error;
  }
  if (auto too_much =
          check_request_size(request, model.max_model_len, context.options.max_waiting_requests)) {
    return too_much;
  }
  if (!context.engine.healthy()) {
    return engine_error("the engine is not ready; retry later", 503);
  }
  const int32_t limit = context.options.max_waiting_requests;
  if (limit > 0 && context.engine.num_waiting() >= static_cast<std::size_t>(limit)) {
    return engine_error(
        "the server is overloaded (" + std::to_string(limit) + " requests waiting); retry later",
        503);
  }
  return std::nullopt;
}

std::unique_ptr<openai_call> start_call(server_context& context, openai_request request,
                                        const model_info& model, std::string display_id,
                                        std::function<void(request_output)> sink,
                                        bool error_chunk) {
  const bool chat = request.kind != api_kind::completion;
  const std::string base = random_id(request.kind == api_kind::responses ? "resp_"
                                     : chat                              ? "chatcmpl-"
                                                                         : "cmpl-");
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
  options.system_fingerprint = system_fingerprint();
  if (chat) {
    options.chat.tools = request.tools;
    options.chat.tool_call_parser = context.config.tool_call_parser;
    options.chat.reasoning_parser = context.config.reasoning_parser;
    options.chat.role = context.config.response_role;
  }
  auto call = std::make_unique<openai_call>(std::move(options), engine_ids);
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    generate_request& prompt = request.prompts[p];
    prompt.request_id = engine_ids[p];
    // The thinking is free; the constraint holds the answer after it (as vLLM does).
    if (chat && !context.config.reasoning_parser.empty())
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

}  // namespace actorllm::net
