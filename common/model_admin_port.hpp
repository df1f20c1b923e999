#pragma once
/// The operator's door to the models of a server that serves several (the admin API's
/// /admin/models, `actorllm admin models`): list them with their memory and state, load one
/// (a model listed but not loaded, or a new folder with its own flags) and drain-then-unload
/// one. net/ calls it from its I/O threads, so every call answers through its callback, once,
/// from any thread, and never blocks the caller. Implementations are thread-safe.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/admin_port.hpp"

namespace actorllm {

/// One model as GET /admin/models shows it.
struct model_view {
  std::string name;
  std::string path;  ///< the model folder
  /// loaded (serves), loading (its weights load; requests for it wait), draining (finishes
  /// what it has; new requests get 503), unloaded (listed; a request or a load starts it) or
  /// failed (the last load failed: `error` says why).
  std::string state;
  std::string error;
  int64_t weight_bytes = 0;    ///< resident weights while loaded (else the folder's estimate)
  int64_t kv_cache_bytes = 0;  ///< the device KV pools it got at load (0 unless loaded)
  int32_t requests_in_flight = 0;
  /// Seconds since its last request ended; 0 while one runs or while it is not loaded.
  double idle_seconds = 0.0;
};

/// POST /admin/models: load `name`. An unknown name needs `path` and is added to the server's
/// models; a known one loads as it was planned, unless `flags` are given.
struct load_model_request {
  std::string name;
  std::string path;
  /// Its own flags as one --model-config entry's JSON object text ({"max_model_len": 512});
  /// empty: none.
  std::string flags_json;
};

class model_admin_port {
 public:
  virtual ~model_admin_port() = default;

  virtual void models(std::function<void(std::vector<model_view>)> done) = 0;
  /// Starts loading; answers 202 once it has started (poll GET for loaded or failed). 400 for a
  /// bad name, path or flag; 409 when it is loaded, loading or draining; 507 when it cannot
  /// fit even after evicting every idle model.
  virtual void load_model(load_model_request request, std::function<void(admin_outcome)> done) = 0;
  /// Starts draining `name`: new requests for it get 503 with Retry-After, those in flight
  /// finish, then its engine stops and its memory is freed (state unloaded). 202; 404 for an
  /// unknown name; 409 unless it is loaded.
  virtual void unload_model(std::string name, std::function<void(admin_outcome)> done) = 0;
};

}  // namespace actorllm
