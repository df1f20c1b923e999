// The admin API's bodies and its calls of the admin_port.
#include "api/admin_api.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

#include "api/openai_call.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

/// "cpu" or "cuda:K" with K a device number.
bool is_device_name(std::string_view device) {
  if (device == "cpu" || device == "cuda") return true;
  constexpr std::string_view cuda = "cuda:";
  if (!device.starts_with(cuda)) return false;
  const std::string_view number = device.substr(cuda.size());
  int32_t k = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), k);
  return !number.empty() && ec == std::errc() && end == number.data() + number.size() && k >= 0;
}

std::optional<api_error> read_count(const json& value, int32_t& out) {
  const auto out_of_range = [] {
    return bad_request("count must be an integer from 1 to " + std::to_string(max_replicas_per_add),
                       "count");
  };
  // nlohmann reads every integer >= 0 as unsigned; a negative one is never in range.
  const bool in_range = value.is_number_unsigned() && value.get<uint64_t>() >= 1 &&
                        value.get<uint64_t>() <= uint64_t{max_replicas_per_add};
  if (!in_range) return out_of_range();
  out = value.get<int32_t>();
  return std::nullopt;
}

/// Calls `done` with the answer to an admin_outcome: 202 and `accepted` when it succeeded.
std::function<void(admin_outcome)> answer_outcome(
    std::function<void(admin_answer)> done,
    std::function<std::string(const admin_outcome&)> accepted) {
  return [done = std::move(done), accepted = std::move(accepted)](admin_outcome outcome) {
    if (!outcome.ok()) {
      const api_error error = admin_error(outcome);
      return done({error.status, error_json(error)});
    }
    // 202 whatever 2xx the port chose: each change is under way, not finished.
    done({202, accepted(outcome)});
  };
}

}  // namespace

std::optional<api_error> parse_add_replicas(std::string_view body, add_replicas_request& out) {
  out = add_replicas_request{};
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::nullopt;
  json parsed;
  if (auto error = parse_json_object(body, parsed)) return error;
  // A null is no count or device: refused by name rather than read as the default (a
  // client's unset variable must not add a replica).
  for (const auto& [name, value] : parsed.items()) {
    if (name == "count") {
      if (auto error = read_count(value, out.count)) return error;
    } else if (name == "device") {
      if (!value.is_string() || !is_device_name(value.get<std::string>()))
        return bad_request("device must be \"cpu\", \"cuda\" or \"cuda:K\"", "device");
      out.device = value.get<std::string>();
    } else {
      return bad_request(
          "unknown field '" + name + "' (POST /admin/replicas takes count and device)", name);
    }
  }
  return std::nullopt;
}

std::optional<api_error> parse_replica_id(std::string_view text, int32_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  const bool digits_only = text.find_first_not_of("0123456789") == std::string_view::npos;
  if (text.empty() || !digits_only || ec != std::errc() || end != text.data() + text.size())
    return bad_request("the replica id must be a decimal integer from 0 to 2147483647, got '" +
                           std::string(text.substr(0, 64)) + "'",
                       "id");
  return std::nullopt;
}

std::string replicas_json(const std::vector<replica_view>& replicas) {
  json data = json::array();
  for (const auto& r : replicas) {
    data.push_back({{"id", r.id},
                    {"device", r.device},
                    {"workers", r.workers},
                    {"state", r.state},
                    {"num_running", r.num_running},
                    {"num_waiting", r.num_waiting},
                    {"kv_cache_usage", r.kv_cache_usage}});
  }
  return to_wire({{"object", "list"}, {"data", std::move(data)}});
}

std::optional<std::vector<replica_view>> parse_replicas_json(std::string_view body) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("data") || !parsed["data"].is_array())
    return std::nullopt;
  std::vector<replica_view> replicas;
  try {
    for (const auto& item : parsed["data"]) {
      replica_view r;
      r.id = item.at("id").get<int32_t>();
      r.device = item.at("device").get<std::string>();
      r.workers = item.at("workers").get<int32_t>();
      r.state = item.at("state").get<std::string>();
      r.num_running = item.at("num_running").get<int32_t>();
      r.num_waiting = item.at("num_waiting").get<int32_t>();
      r.kv_cache_usage = item.at("kv_cache_usage").get<double>();
      replicas.push_back(std::move(r));
    }
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return replicas;
}

std::string added_json(const std::vector<int32_t>& ids) {
  return to_wire({{"ids", ids}});
}

std::string replica_state_json(int32_t id, std::string_view state) {
  return to_wire({{"id", id}, {"state", state}});
}

api_error admin_error(const admin_outcome& outcome) {
  const std::string message = outcome.error.empty() ? "the admin call failed" : outcome.error;
  if (outcome.status < 400 || outcome.status > 599) return internal_error(message);
  api_error error{outcome.status, message, "invalid_request_error", {}, {}};
  if (outcome.status >= 500) error.type = "server_error";
  if (outcome.status == 404) error.code = "replica_not_found";
  return error;
}

void run_admin_call(admin_port& port, const route& r, std::string_view method,
                    std::string_view body, std::function<void(admin_answer)> done) {
  const auto refuse = [&done](const api_error& error) { done({error.status, error_json(error)}); };
  if (r.target == endpoint::admin_replicas && method == "GET") {
    return port.replicas([done = std::move(done)](std::vector<replica_view> replicas) {
      done({200, replicas_json(replicas)});
    });
  }
  if (r.target == endpoint::admin_replicas) {
    add_replicas_request add;
    if (auto error = parse_add_replicas(body, add)) return refuse(*error);
    return port.add_replicas(
        add.count, std::move(add.device),
        answer_outcome(std::move(done), [](const admin_outcome& o) { return added_json(o.ids); }));
  }
  int32_t id = 0;
  if (auto error = parse_replica_id(r.replica_id, id)) return refuse(*error);
  if (r.target == endpoint::admin_drain) {
    return port.drain_replica(id, answer_outcome(std::move(done), [id](const admin_outcome&) {
                                return replica_state_json(id, "draining");
                              }));
  }
  port.stop_replica(id, answer_outcome(std::move(done), [id](const admin_outcome&) {
                      return replica_state_json(id, "dead");
                    }));
}

}  // namespace actorllm::api
