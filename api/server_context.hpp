#pragma once
/// What the API's decisions read: the engine, the server's configuration and the limits the
/// command line sets. One per server, shared by its sessions; it outlives them.
#include <cstdint>
#include <memory>

#include "api/tool_request.hpp"
#include "common/admin_port.hpp"
#include "common/engine_port.hpp"
#include "common/model_admin_port.hpp"
#include "config/engine_config.hpp"

namespace actorllm::api {

class response_store;
class background_responses;

struct server_context {
  engine_port& engine;
  server_config config;
  admin_port* admin = nullptr;  ///< null: /admin answers 503 (when admin_api_key is set)
  /// The models' door for /admin/models; null (a server of one model): /admin/models answers 501.
  model_admin_port* models_admin = nullptr;
  int32_t max_waiting_requests = 0;  ///< 0: no limit; else 503 while the engine has this many
  /// Serve /metrics alone (the --metrics-port listener): every other path is a 404, so that a
  /// port opened to scrapers exposes no API.
  bool metrics_only = false;
  /// The Responses API's stored responses; null: none is kept (every id is unknown).
  std::shared_ptr<response_store> responses = nullptr;
  /// The Responses calls running in the background (background: true); null: none may.
  std::shared_ptr<background_responses> background = nullptr;

  /// The tool-call flags, as the request parser takes them.
  tool_settings tools() const { return {config.enable_auto_tool_choice, config.tool_call_parser}; }
  /// The parsers of `model`'s output: its own (a server of several models), else the server's.
  output_parsers parsers_of(const model_info& model) const {
    if (model.parsers) return *model.parsers;
    return {config.enable_auto_tool_choice, config.tool_call_parser, config.reasoning_parser};
  }
  tool_settings tools_of(const model_info& model) const {
    const output_parsers p = parsers_of(model);
    return {p.enable_auto_tool_choice, p.tool_call_parser};
  }
};

}  // namespace actorllm::api
