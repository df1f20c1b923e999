// `actorllm admin`: flags, the request they name, the call, and what is printed of the answer.
#include "app/admin_command.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/admin_api.hpp"
#include "api/admin_models_api.hpp"
#include "app/admin_table.hpp"
#include "config/flag_parser.hpp"
#include "config/served_models.hpp"
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

/// What one invocation asks the server: method, path and body, and which list its answer is.
struct admin_request {
  enum class listing : uint8_t { none, replicas, models };
  const char* method = "GET";
  std::string path;
  std::string body;
  listing list = listing::none;
};

/// The flags that belong to one command each.
struct command_flags {
  std::optional<int64_t> count;       ///< add
  std::optional<std::string> device;  ///< add
  std::optional<std::string> path;    ///< models load
  std::optional<std::string> flags;   ///< models load: a JSON object's text
};

std::optional<admin_request> usage(std::FILE* err, const std::string& why) {
  std::fprintf(err, "%s: %s (see actorllm admin --help)\n", name, why.c_str());
  return std::nullopt;
}

/// The request of `models list | load NAME | unload NAME` (`words` without "models"), or
/// nullopt after printing why not.
std::optional<admin_request> models_request_for(const std::vector<std::string>& words,
                                                const command_flags& flags, std::FILE* err) {
  if (words.empty()) return usage(err, "models needs a command: list, load NAME or unload NAME");
  const std::string& command = words[0];
  if (command != "load" && (flags.path || flags.flags))
    return usage(err, "--path and --flags belong to models load");
  if (command == "list") {
    if (words.size() != 1) return usage(err, "models list takes no argument");
    return admin_request{"GET", "/admin/models", {}, admin_request::listing::models};
  }
  if (command != "load" && command != "unload")
    return usage(err, "unknown command 'models " + command + "': list, load NAME or unload NAME");
  if (words.size() != 2) return usage(err, "models " + command + " takes one model name");
  // Checked here as the server does, so that the name is safe to put in the path.
  const std::string& model = words[1];
  if (!is_model_name(model))
    return usage(err, "'" + model + "' is no model name (letters, digits, '.', '_', '-' or ':')");
  if (command == "unload") return admin_request{"DELETE", "/admin/models/" + model, {}};
  nlohmann::json body = {{"name", model}};
  if (flags.path) body["path"] = *flags.path;
  if (flags.flags) {
    const auto parsed = nlohmann::json::parse(*flags.flags, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object())
      return usage(err, "--flags must be a JSON object, such as '{\"max_model_len\":512}'");
    body["flags"] = parsed;
  }
  // A path that is not UTF-8 cannot travel in JSON: its bad bytes become U+FFFD.
  return admin_request{"POST", "/admin/models",
                       body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

/// The request that `words` (the command and its arguments) name, or nullopt after printing
/// why not.
std::optional<admin_request> request_for(const std::vector<std::string>& words,
                                         const command_flags& flags, std::FILE* err) {
  if (words.empty())
    return usage(err, "a command is needed: list, add, drain ID, stop ID or models ...");
  const std::string& command = words[0];
  if (command != "add" && (flags.count || flags.device))
    return usage(err, "--count and --device belong to add");
  if (command == "models")
    return models_request_for(std::vector<std::string>(words.begin() + 1, words.end()), flags, err);
  if (flags.path || flags.flags) return usage(err, "--path and --flags belong to models load");
  if (command == "list" || command == "add") {
    if (words.size() != 1) return usage(err, command + " takes no argument");
    if (command == "list")
      return admin_request{"GET", "/admin/replicas", {}, admin_request::listing::replicas};
    nlohmann::json body = nlohmann::json::object();
    if (flags.count) body["count"] = *flags.count;
    if (flags.device) body["device"] = *flags.device;
    return admin_request{"POST", "/admin/replicas", body.dump()};
  }
  if (command == "drain" || command == "stop") {
    if (words.size() != 2) return usage(err, command + " takes one replica id");
    const std::string& id = words[1];
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
      return usage(err, "the replica id must be a number (got '" + id + "')");
    if (command == "drain") return admin_request{"POST", "/admin/replicas/" + id + "/drain", {}};
    return admin_request{"DELETE", "/admin/replicas/" + id, {}};
  }
  return usage(err, "unknown command '" + command + "': list, add, drain ID, stop ID or models");
}

/// Prints the answer of a list as its table; false (after saying so) when it is not one.
bool print_list(admin_request::listing list, const std::string& body, std::FILE* out,
                std::FILE* err) {
  if (list == admin_request::listing::replicas) {
    if (const auto replicas = api::parse_replicas_json(body)) {
      std::fputs(replica_table(*replicas).c_str(), out);
      return true;
    }
  } else if (const auto models = api::parse_models_json(body)) {
    std::fputs(model_table(*models).c_str(), out);
    return true;
  }
  std::fprintf(err, "%s: the server's answer is not a %s list: %s\n", name,
               list == admin_request::listing::replicas ? "replica" : "model", body.c_str());
  return false;
}

}  // namespace

int run_admin_command(int argc, char** argv, const std::string& env_key, std::FILE* out,
                      std::FILE* err) {
  std::string url_text = "http://127.0.0.1:8000";
  std::string key;
  command_flags flags;
  std::vector<std::string> words;
  int64_t timeout_s = 30;
  flag_parser p(
      "actorllm admin [options] list | add [--count N] [--device D] | drain ID | stop ID\n"
      "       | models list | models load NAME [--path P] [--flags JSON] | models unload NAME",
      "Lists, adds, drains or stops the engine replicas of a running server, and lists, loads\n"
      "or drains and unloads the models of a server of several models (--model NAME=PATH,\n"
      "--models-dir), through its admin API (served when the server has --admin-api-key).\n"
      "list and models list print a table; the other commands print the server's JSON. The\n"
      "key comes from --admin-api-key or the environment variable ACTORLLM_ADMIN_API_KEY.");
  p.add_string("--url", "the server", url_text);
  p.add_string("--admin-api-key", "the server's --admin-api-key", key);
  p.add("--count", "N", "add: how many replicas, 1 to 16 (default 1)",
        [&flags](std::string_view v) -> std::string {
          int64_t n = 0;
          if (auto e = parse_number(v, n); !e.empty()) return e;
          flags.count = n;
          return {};
        });
  p.add("--device", "D", "add: cpu or cuda:K (default: the server's own)",
        [&flags](std::string_view v) -> std::string {
          flags.device = std::string(v);
          return {};
        });
  p.add("--path", "P", "models load: its folder (for a name the server lacks)",
        [&flags](std::string_view v) -> std::string {
          flags.path = std::string(v);
          return {};
        });
  p.add("--flags", "JSON", "models load: its own flags ('{\"max_model_len\":512}')",
        [&flags](std::string_view v) -> std::string {
          flags.flags = std::string(v);
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
  const auto request = request_for(words, flags, err);
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
  if (request->list != admin_request::listing::none)
    return print_list(request->list, reply.body, out, err) ? 0 : 1;
  std::fprintf(out, "%s\n", reply.body.c_str());
  return 0;
}

}  // namespace actorllm::app
