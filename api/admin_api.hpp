#pragma once
/// The admin API without the sockets: what GET/POST /admin/replicas, POST
/// /admin/replicas/{id}/drain and DELETE /admin/replicas/{id} read and answer, and the call
/// of the admin_port that each makes. Routing and authorization are routes.hpp's and access.hpp's.
///
///   GET    /admin/replicas                 200 {"object":"list","data":[replica, ...]}
///   POST   /admin/replicas {"count","device"}   202 {"ids":[...]}
///   POST   /admin/replicas/{id}/drain      202 {"id":N,"state":"draining"}
///   DELETE /admin/replicas/{id}            202 {"id":N,"state":"dead"}
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_protocol.hpp"
#include "api/routes.hpp"
#include "common/admin_port.hpp"

namespace actorllm::api {

/// The most replicas one POST /admin/replicas may add.
inline constexpr int32_t max_replicas_per_add = 16;

/// The body of POST /admin/replicas.
struct add_replicas_request {
  int32_t count = 1;
  std::string device;  ///< "cpu" or "cuda:K"; empty: the engine's own
};

/// Reads `{"count": 1..16, "device": "cpu" | "cuda:K"}`; both fields are optional (null counts
/// as absent) and an empty body is `{}`. A wrong type, range or unknown field is a 400 naming
/// the field.
std::optional<api_error> parse_add_replicas(std::string_view body, add_replicas_request& out);

/// Reads the {id} of /admin/replicas/{id}: decimal digits of a value in 0..INT32_MAX, else 400.
std::optional<api_error> parse_replica_id(std::string_view text, int32_t& out);

/// {"object":"list","data":[{"id","device","workers","state","num_running","num_waiting",
/// "kv_cache_usage"}, ...]}
std::string replicas_json(const std::vector<replica_view>& replicas);
/// The replicas of a replicas_json body, or nullopt when the body is not one.
std::optional<std::vector<replica_view>> parse_replicas_json(std::string_view body);

/// {"ids":[...]}, the answer to an add.
std::string added_json(const std::vector<int32_t>& ids);
/// {"id":N,"state":"..."}, the answer to a drain ("draining") or a stop ("dead").
std::string replica_state_json(int32_t id, std::string_view state);
/// The OpenAI-style error of a failed admin call, with the outcome's status (a status that is
/// not an HTTP error becomes 500).
api_error admin_error(const admin_outcome& outcome);

/// An answer of the admin API: the HTTP status and the JSON body.
struct admin_answer {
  int32_t status = 200;
  std::string body;
};

/// Runs the admin call that `r` names (an admin endpoint whose method is allowed; `method` is
/// the request's), reading the id from `r` and the add request from `body`. `done` is called
/// once: at once for a request refused here, else from whichever thread `port` answers on.
void run_admin_call(admin_port& port, const route& r, std::string_view method,
                    std::string_view body, std::function<void(admin_answer)> done);

}  // namespace actorllm::api
