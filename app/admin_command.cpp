// `actorllm admin`: flags, the request they name, the call, and what is printed of the answer.
#include "app/admin_command.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/admin_api.hpp"
#include "app/admin_table.hpp"
#include "config/flag_parser.hpp"
#include "net/http_client.hpp"

namespace actorllm::app {
namespace {

constexpr const char* name = "actorllm admin";
constexpr int exit_usage = 2;  // app/command.hpp's, which belongs to the program, not this library

/// The "error.message" of an OpenAI-style error body, else the body itself.
std::string error_message(const std::string& body) {
  const auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
      parsed["error"].contains("message") && parsed["error"]["message"].is_string())
    return parsed["error"]["message"].get<std::string>();
  return body.empty() ? "(no message)" : body;
}

/// What one invocation asks the server: method, path and body.
struct admin_request {
  const char* method = "GET";
  std::string path;
  std::string body;
};

/// The request that `words` (the command and its argument) name, or nullopt after printing
/// why not. `count` and `device` belong to add only.
std::optional<admin_request> request_for(const std::vector<std::string>& words,
                                         const std::optional<int64_t>& count,
                                         const std::optional<std::string>& device, std::FILE* err) {
  const auto usage = [err](const std::string& why) -> std::optional<admin_request> {
    std::fprintf(err, "%s: %s (see actorllm admin --help)\n", name, why.c_str());
    return std::nullopt;
  };
  if (words.empty()) return usage("a command is needed: list, add, drain ID or stop ID");
  const std::string& command = words[0];
  if (command != "add" && (count || device)) return usage("--count and --device belong to add");
  if (command == "list" || command == "add") {
    if (words.size() != 1) return usage(command + " takes no argument");
    if (command == "list") return admin_request{"GET", "/admin/replicas", {}};
    nlohmann::json body = nlohmann::json::object();
    if (count) body["count"] = *count;
    if (device) body["device"] = *device;
    return admin_request{"POST", "/admin/replicas", body.dump()};
  }
  if (command == "drain" || command == "stop") {
    if (words.size() != 2) return usage(command + " takes one replica id");
    const std::string& id = words[1];
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
      return usage("the replica id must be a number (got '" + id + "')");
    if (command == "drain") return admin_request{"POST", "/admin/replicas/" + id + "/drain", {}};
    return admin_request{"DELETE", "/admin/replicas/" + id, {}};
  }
  return usage("unknown command '" + command + "': list, add, drain ID or stop ID");
}

}  // namespace

int run_admin_command(int argc, char** argv, const std::string& env_key, std::FILE* out,
                      std::FILE* err) {
  std::string url_text = "http://127.0.0.1:8000";
  std::string key;
  std::optional<int64_t> count;
  std::optional<std::string> device;
  std::vector<std::string> words;
  int64_t timeout_s = 30;
  flag_parser p("actorllm admin [options] list | add [--count N] [--device D] | drain ID | stop ID",
                "Lists, adds, drains or stops the engine replicas of a running server through its\n"
                "admin API (served when the server has --admin-api-key). The key comes from\n"
                "--admin-api-key or the environment variable ACTORLLM_ADMIN_API_KEY.");
  p.add_string("--url", "the server", url_text);
  p.add_string("--admin-api-key", "the server's --admin-api-key", key);
  p.add("--count", "N", "add: how many replicas, 1 to 16 (default 1)",
        [&count](std::string_view v) -> std::string {
          int64_t n = 0;
          if (auto e = parse_number(v, n); !e.empty()) return e;
          count = n;
          return {};
        });
  p.add("--device", "D", "add: cpu or cuda:K (default: the server's own)",
        [&device](std::string_view v) -> std::string {
          device = std::string(v);
          return {};
        });
  p.add_number("--timeout", "seconds to wait for the answer", timeout_s);
  p.on_positional("COMMAND", [&words](std::string_view v) -> std::string {
    words.emplace_back(v);
    return {};
  });
  if (auto error = p.parse(argc, argv)) {
    std::fprintf(err, "%s: %s\n", name, error->c_str());
    return exit_usage;
  }
  if (p.help_requested()) {
    std::fputs(p.help().c_str(), out);
    return 0;
  }
  // Not the flag's default, which --help would print.
  if (key.empty()) key = env_key;
  if (timeout_s < 1) {
    std::fprintf(err, "%s: --timeout: must be >= 1\n", name);
    return exit_usage;
  }
  std::string url_error;
  const auto url = net::parse_http_url(url_text, url_error);
  if (!url) {
    std::fprintf(err, "%s: --url: %s\n", name, url_error.c_str());
    return exit_usage;
  }
  const auto request = request_for(words, count, device, err);
  if (!request) return exit_usage;

  const net::http_reply reply = net::http_fetch(*url, request->method, request->path, request->body,
                                                key, static_cast<double>(timeout_s));
  if (!reply.error.empty()) {
    std::fprintf(err, "%s: %s\n", name, reply.error.c_str());
    return 1;
  }
  if (reply.status < 200 || reply.status >= 300) {
    std::fprintf(err, "%s: %d: %s\n", name, reply.status, error_message(reply.body).c_str());
    return 1;
  }
  if (words[0] == "list") {
    if (const auto replicas = api::parse_replicas_json(reply.body)) {
      std::fputs(replica_table(*replicas).c_str(), out);
      return 0;
    }
    std::fprintf(err, "%s: the server's answer is not a replica list: %s\n", name,
                 reply.body.c_str());
    return 1;
  }
  std::fprintf(out, "%s\n", reply.body.c_str());
  return 0;
}

}  // namespace actorllm::app
