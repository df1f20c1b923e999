#pragma once
/// The Responses calls that run on without their connection (`background: true`): the POST
/// is answered at once with the queued Response object, the engine's deltas are folded into
/// the call wherever they arrive, and the store follows the call (queued, in_progress, then
/// completed, incomplete or failed), so that GET /v1/responses/{id} reads it. cancel() ends
/// one: its engine request is aborted (its KV blocks come back) and it is stored as cancelled.
///
/// Thread-safe: engine threads deliver deltas while I/O threads start and cancel. Each call
/// has its own mutex; the engine is never called with one held (an abort may deliver its
/// last delta on the calling thread). A call holds the store, not this registry, so that
/// deltas arriving after the server is gone are harmless.
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "api/openai_protocol.hpp"
#include "common/engine_port.hpp"

namespace actorllm::api {

struct server_context;
class response_store;

class background_responses : public std::enable_shared_from_this<background_responses> {
 public:
  explicit background_responses(std::shared_ptr<response_store> store);

  /// Starts `request` (a Responses call with background and store, admitted) and returns
  /// the queued Response object, already stored; a 400 (and nothing runs) when the store
  /// cannot keep it. Throws what the engine's submit throws.
  std::variant<nlohmann::json, api_error> start(server_context& context, openai_request request,
                                                const model_info& model);

  /// Ends the running call `id`: its engine request is aborted and the store holds it as
  /// cancelled. Returns that Response object; nullopt when `id` is not running (finished,
  /// or never started here).
  std::optional<nlohmann::json> cancel(const std::string& id);

  /// Ends every running call as failed with `reason` (the server is stopping), aborting its
  /// engine request.
  void abort_all(const std::string& reason);

  std::size_t num_running() const;

 private:
  class job;
  void forget(const std::string& id);

  std::shared_ptr<response_store> store_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<job>> running_;
};

}  // namespace actorllm::api
