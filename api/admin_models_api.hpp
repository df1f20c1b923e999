#pragma once
/// The models' admin API without the sockets: what GET/POST /admin/models and DELETE
/// /admin/models/{name} read and answer, and the call of the model_admin_port that each makes.
/// Routing and authorization are routes.hpp's and access.hpp's, as for /admin/replicas.
///
///   GET    /admin/models                        200 {"object":"list","data":[model, ...]}
///   POST   /admin/models {"name","path","flags"}  202 {"id":NAME,"state":"loading"}
///   DELETE /admin/models/{name}                 202 {"id":NAME,"state":"draining"}
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/admin_api.hpp"
#include "api/openai_protocol.hpp"
#include "api/routes.hpp"
#include "common/model_admin_port.hpp"

namespace actorllm::api {

/// Reads `{"name": NAME, "path": "/models/x", "flags": {...}}`. `name` is required and must be
/// a model name (config/served_models.hpp's is_model_name); `path` is an optional non-empty
/// string without NUL; `flags` an optional JSON object whose compact text becomes
/// `flags_json` (its keys are judged by the port, as a --model-config entry). A missing name,
/// a null, a wrong type or an unknown field is a 400 naming the field.
std::optional<api_error> parse_load_model(std::string_view body, load_model_request& out);

/// Checks the {name} of /admin/models/{name} as written in the path: a model name, else 400
/// naming `name`.
std::optional<api_error> check_model_name(std::string_view name);

/// {"object":"list","data":[{"id","object":"model","path","state","error" (only when not
/// empty),"weight_bytes","kv_cache_bytes","requests_in_flight","idle_seconds"}, ...]}
std::string models_json(const std::vector<model_view>& models);
/// The models of a models_json body, or nullopt when the body is not one.
std::optional<std::vector<model_view>> parse_models_json(std::string_view body);

/// {"id":NAME,"state":"..."}, the answer to a load ("loading") or an unload ("draining").
std::string model_state_json(std::string_view name, std::string_view state);

/// admin_error's error, with code "model_not_found" on a 404.
api_error model_admin_error(const admin_outcome& outcome);

/// Runs the call that `r` names (admin_models or admin_model with its method allowed; `method`
/// is the request's), reading the name from `r` and the load request from `body`. `done` is
/// called once: at once for a request refused here, else from whichever thread `port` answers on.
void run_model_admin_call(model_admin_port& port, const route& r, std::string_view method,
                          std::string_view body, std::function<void(admin_answer)> done);

}  // namespace actorllm::api
