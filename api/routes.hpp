#pragma once
/// Which endpoint a request names: the route table of the HTTP API.
#include <cstdint>
#include <string>
#include <string_view>

namespace actorllm::api {

enum class endpoint : uint8_t {
  completions,
  chat_completions,
  responses,
  messages,               ///< POST /v1/messages (Anthropic's Messages API)
  messages_count_tokens,  ///< POST /v1/messages/count_tokens
  response,               ///< GET and DELETE /v1/responses/{id}: a stored response
  response_input_items,   ///< GET /v1/responses/{id}/input_items
  response_cancel,        ///< POST /v1/responses/{id}/cancel: a background response
  embeddings,             ///< POST /v1/embeddings (--task embed)
  models,
  model,
  tokenize,
  detokenize,
  health,
  version,
  metrics,
  websocket,
  admin_replicas,       ///< GET (list) and POST (add) /admin/replicas
  admin_drain,          ///< POST /admin/replicas/{id}/drain
  admin_replica,        ///< DELETE /admin/replicas/{id} (stop)
  admin_models,         ///< GET (list) and POST (load) /admin/models
  admin_model,          ///< DELETE /admin/models/{name} (drain, then unload)
  engine_stats,         ///< GET /v1/engine/stats: the live engine view's numbers
  web_page,             ///< GET /: the playground (web/index.html)
  web_asset,            ///< GET /ui/{name}: the playground's other files
  load_lora_adapter,    ///< POST /v1/load_lora_adapter (--enable-lora-runtime-updates)
  unload_lora_adapter,  ///< POST /v1/unload_lora_adapter
  unknown
};

struct route {
  endpoint target = endpoint::unknown;
  bool method_allowed = false;
  const char* allow = "";   ///< the methods the path accepts, for 405's Allow header
  std::string model_id;     ///< GET /v1/models/{id}
  std::string replica_id;   ///< /admin/replicas/{id}..., as written (admin_api.hpp reads it)
  std::string model_name;   ///< /admin/models/{name}, as written (admin_models_api.hpp judges it)
  std::string response_id;  ///< /v1/responses/{id}..., as written (checked by its handler)
  std::string asset;        ///< GET / and /ui/{name}: the file of web/ it names
  /// The path with its id replaced by {id} (or {name}) where it has one
  /// ("/admin/replicas/{id}/drain"), the label of the request metrics; empty: the path itself.
  const char* pattern = "";
};

/// Maps method and target (query string ignored) to an endpoint.
route find_route(std::string_view method, std::string_view target);

/// Whether `target` (query string ignored) is /admin or below it, known route or not.
bool is_admin_path(std::string_view target);

}  // namespace actorllm::api
