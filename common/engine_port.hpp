#pragma once
/// The only door between the network layer and the engine. net/ calls it from its I/O
/// threads; the gateway (an actor shell) implements it, tests implement it with a fake.
/// Every method may be called concurrently from several threads: implementations are
/// thread-safe. The engine outlives the http_server that uses it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/generate_request.hpp"
#include "common/sampling_defaults.hpp"
#include "common/sampling_params.hpp"

namespace actorllm {

/// A LoRA adapter served over the model: /v1/models lists it with the model as its parent.
struct adapter_info {
  std::string name;  ///< what requests give as `model`
  std::string path;  ///< its PEFT folder
};

/// How a model's output is read: its tool calls and its reasoning (the serve flags
/// --enable-auto-tool-choice, --tool-call-parser and --reasoning-parser, or a model's own in
/// --model-config).
struct output_parsers {
  bool enable_auto_tool_choice = false;
  std::string tool_call_parser;  ///< empty: none
  std::string reasoning_parser;  ///< empty: none
};

/// What /v1/models and the validation of `model` need to know.
struct model_info {
  std::string name;           ///< served model name, the id /v1/models reports
  std::string root;           ///< where the weights came from (folder), for /v1/models
  int32_t max_model_len = 0;  ///< context length in tokens
  int64_t created = 0;        ///< unix seconds when the model was loaded
  /// Other values `model` may carry: the --model argument as given when no
  /// --served-model-name was set, since that argument is the name vLLM would serve.
  std::vector<std::string> aliases;
  /// What a request's sampling fields default to (the model's generation_config.json).
  sampling_defaults sampling;
  /// --task embed: /v1/embeddings serves pooled hidden states of `embedding_size` values.
  bool embeddings = false;
  int32_t embedding_size = 0;
  pooling_type pooling = pooling_type::last;
  bool normalize = true;
  /// --enable-lora: the adapters loaded now (requests name them as `model`).
  std::vector<adapter_info> adapters = {};
  /// The model's own output parsers, where its engine knows them; nullopt: the server's.
  std::optional<output_parsers> parsers = std::nullopt;

  /// Whether `model` may be `requested`: the model itself, an alias, or one of its adapters.
  bool answers_to(std::string_view requested) const {
    if (requested == name) return true;
    for (const auto& alias : aliases)
      if (requested == alias) return true;
    return find_adapter(requested) != nullptr;
  }
  /// The name the engine knows a request for `requested` by: an adapter's own name, else the
  /// served name (aliases are the network layer's business).
  std::string engine_name(std::string_view requested) const {
    return find_adapter(requested) ? std::string(requested) : name;
  }
  const adapter_info* find_adapter(std::string_view requested) const {
    for (const auto& a : adapters)
      if (requested == a.name) return &a;
    return nullptr;
  }
};

/// Where a served model stands: only a loaded model takes requests; the others are listed
/// (/v1/models) and refused with 503 (loading, unloaded, draining: it finishes what it has,
/// then unloads) or with why it failed.
enum class model_state { loaded, loading, unloaded, failed, draining };

inline const char* to_string(model_state state) {
  switch (state) {
    case model_state::loading:
      return "loading";
    case model_state::unloaded:
      return "unloaded";
    case model_state::failed:
      return "failed";
    case model_state::draining:
      return "draining";
    default:
      return "loaded";
  }
}

/// One model of the server, as /v1/models lists it and admission finds it.
struct model_listing {
  model_info info;  ///< name and root always; the rest only once it loaded
  model_state state = model_state::loaded;
  std::string error = {};  ///< failed: why, in one line
  /// Not loaded now, but a request admitted for it waits for its reload and is served: it is
  /// being evicted (or was) while it may load again on demand. `info` is then complete.
  bool reloads = false;
};

/// Whether a request for `model` may be admitted: it serves, or serves again after a reload.
inline bool admits_requests(const model_listing& model) {
  return model.state == model_state::loaded || model.reloads;
}

/// A runtime LoRA update: adapter `name`, read from the PEFT folder `path` (loads only), for
/// `base_model` (loads only; a served name, empty: the default model; vLLM's base_model_name).
struct lora_update_request {
  std::string name;
  std::string path = {};
  std::string base_model = {};
};

/// Answer to load_lora_adapter() and unload_lora_adapter(): empty error on success.
struct lora_update_result {
  std::string error;
  int32_t status = 200;  ///< 400 a bad adapter or name, 404 unknown name or updates off
};

/// Answer to tokenize(): the ids, or an error with its HTTP status.
struct tokenize_result {
  std::vector<int32_t> tokens;
  std::vector<std::string> token_strs;  ///< text of each token, when the engine has it
  int32_t max_model_len = 0;
  std::string error;         ///< non-empty: the request failed
  int32_t error_status = 0;  ///< 400, 404, 500, ...
};

/// Answer to detokenize(): the text, or an error with its HTTP status.
struct detokenize_result {
  std::string text;
  std::string error;
  int32_t error_status = 0;
};

/// Answer to health(): whether the engine serves (at least one replica does), and the
/// replicas that do not.
struct engine_health {
  bool ok = true;
  /// One line naming each replica that does not serve, and why (empty: all serve); when !ok,
  /// why nothing serves.
  std::string reason;
};

class engine_port {
 public:
  using output_callback = std::function<void(request_output)>;

  virtual ~engine_port() = default;

  /// Starts `request` (request_id already unique). on_output may be called from any thread,
  /// in order for each choice, once per delta; the last delta of each choice (index in
  /// [0, n)) has finish != none. A request the engine rejects (prompt too long: the message
  /// names both numbers; unknown model; no capacity) gets one output with
  /// finish == error, `error` and `error_status` (400, 404, 503, ...) set. After abort()
  /// more calls are allowed but not required. Calls that arrive after the server stopped
  /// are dropped safely, so the callback may outlive the server.
  virtual void submit(generate_request request, output_callback on_output) = 0;

  /// Stops a request and frees its KV blocks within one step. Unknown or finished ids are
  /// ignored. Called when a client disconnects or cancels, or when a sibling prompt failed.
  virtual void abort(const std::string& request_id) = 0;

  /// Token ids of a prompt as the engine would see it: `kind` is text (with
  /// add_special_tokens) or chat (chat_json, add_generation_prompt). `done` once, any thread.
  virtual void tokenize(generate_request request, std::function<void(tokenize_result)> done) = 0;

  /// Text of token ids in the tokenizer of the model the request names (an engine of one
  /// model reads them with its own). `done` is called once, from any thread.
  virtual void detokenize(detokenize_request request,
                          std::function<void(detokenize_result)> done) = 0;

  /// True only while the engine loop is alive (false while loading or after it died): requests
  /// are admitted while it holds, even if some replica is down (the others serve them).
  virtual bool healthy() const = 0;

  /// Liveness for /health: not ok while the engine is not running, or while any replica is
  /// down or restarting its workers, with the reason naming them. The default follows
  /// healthy().
  virtual engine_health health() const {
    if (healthy()) return {};
    return {false, "the engine is not running"};
  }

  /// The default model: the only one, or the first of several (what a request without
  /// `model` gets).
  virtual model_info model() const = 0;

  /// The model `requested` names (the served name, an alias or an adapter; empty: the default
  /// model), loaded or not; nullopt when it names none (a 404). The default: model() alone.
  virtual std::optional<model_listing> find_model(std::string_view requested) const {
    model_info info = model();
    if (!requested.empty() && !info.answers_to(requested)) return std::nullopt;
    return model_listing{std::move(info)};
  }
  /// Every model served, the default first, for /v1/models. The default: model() alone.
  virtual std::vector<model_listing> models() const { return {model_listing{model()}}; }
  /// How many models models() lists (1 for one engine).
  virtual std::size_t num_models() const { return 1; }
  /// Calls `ready` once (any thread) when a request for `requested` may be admitted: at once,
  /// unless the model it names is listed but not loaded and the server loads it (on demand,
  /// or already); then once it serves, failed, or the server's load timeout passed. Admission
  /// reads the model's state afterwards. The default: at once.
  virtual void await_model(std::string_view requested, std::function<void()> ready) {
    (void)requested;
    ready();
  }

  /// vLLM's /v1/load_lora_adapter: loads the PEFT folder `r.path` as adapter `r.name` of model
  /// `r.base_model`. Any thread; may block while the adapter is read. The default: LoRA updates
  /// are off.
  virtual lora_update_result load_lora_adapter(const lora_update_request& r) {
    (void)r;
    return {"runtime LoRA updates are off (--enable-lora-runtime-updates)", 404};
  }
  /// vLLM's /v1/unload_lora_adapter: `name` is no longer served; requests using it finish.
  virtual lora_update_result unload_lora_adapter(const std::string& name) {
    (void)name;
    return {"runtime LoRA updates are off (--enable-lora-runtime-updates)", 404};
  }

  /// The /metrics body in Prometheus text format 0.0.4.
  virtual std::string metrics_text() = 0;

  /// The body of GET /v1/engine/stats: replicas' queues, KV use, steps and counters, and
  /// every actor's mailbox depth (monitoring/engine_view.hpp has the fields). Default: none.
  virtual std::string engine_stats_json() { return {}; }

  /// One HTTP request or WebSocket call ended with `status` (for http_requests_total).
  /// `path` is the route without its query string. Any thread; the default ignores it.
  virtual void on_http_request(std::string_view path, int status) { (void)path, (void)status; }

  /// Requests admitted but not yet running; the server answers 503 while this is at or above
  /// its max_waiting_requests, instead of queueing without bound.
  virtual std::size_t num_waiting() const = 0;
};

}  // namespace actorllm
