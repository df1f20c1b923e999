// `actorllm serve`: the OpenAI-compatible server over the actor engine.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <thread>

#include "actors/system/engine_system.hpp"
#include "actors/system/replica_manager.hpp"
#include "api/response_store.hpp"
#include "app/command.hpp"
#include "app/model_engines.hpp"
#include "app/stop_signals.hpp"
#include "config/engine_flags.hpp"
#include "config/served_models.hpp"
#include "net/http_server.hpp"

namespace actorllm::app {
namespace {

void log_line(const char* level, const std::string& text) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%m-%d %H:%M:%S", std::localtime(&now));
  std::fprintf(stderr, "%s %s %s\n", level, stamp, text.c_str());
}

/// Plans and loads the models of --model NAME=PATH / --models-dir, each in its own engine.
/// Returns the exit status when the server cannot start: a bad plan (status 2), or no model
/// that loaded (1); a model that fails alone is marked failed and the others serve.
std::optional<int> load_models(const engine_config& config, std::unique_ptr<model_engines>& out) {
  if (config.autoscale.enabled() || config.cluster.port >= 0) {
    std::fprintf(stderr,
                 "actorllm serve: --autoscale and --cluster-port serve one model; several "
                 "models (--model NAME=PATH, --models-dir) take --replicas per model\n");
    return exit_usage;
  }
  std::vector<model_plan> plans;
  if (auto error = plan_models(config, plans); !error.empty()) {
    std::fprintf(stderr, "actorllm serve: %s\n", error.c_str());
    return exit_usage;
  }
  const int64_t budget = config.models.kv_budget_bytes > 0 ? config.models.kv_budget_bytes
                                                           : default_models_kv_budget(config);
  if (budget <= 0) {
    std::fprintf(stderr,
                 "actorllm serve: --models-kv-budget: give the bytes of KV cache the models "
                 "share on this device\n");
    return exit_usage;
  }
  model_engines_options options;
  options.kv_budget_bytes = budget;
  options.limits = {.max_loaded = config.models.max_loaded,
                    .memory_bytes = config.models.memory_budget_bytes,
                    .keep_alive_s = config.models.keep_alive_s};
  options.load_timeout_s = config.models.load_timeout_s;
  options.base = config;
  options.base.model = {};
  options.base.models = {};
  out = std::make_unique<model_engines>(std::move(plans), std::move(options), log_line);
  out->start();
  const auto listed = out->directory().models();
  const bool on_demand = std::any_of(listed.begin(), listed.end(), [](const model_listing& m) {
    return m.state == model_state::unloaded;
  });
  if (out->num_loaded() == 0 && !on_demand) {
    std::fprintf(stderr, "actorllm serve: no model loaded\n");
    return 1;
  }
  return std::nullopt;
}

int run_serve(int argc, char** argv) {
  engine_config config;
  flag_parser p(
      "actorllm serve [MODEL] [options]",
      "Serves the OpenAI API (/v1/completions, /v1/chat/completions, /v1/responses,\n"
      "/v1/models, /v1/ws, /tokenize, /detokenize, /health, /version, /metrics) over HTTP, SSE\n"
      "and WebSocket.");
  add_engine_flags(p, config);
  add_models_flags(p, config.models);
  add_server_flags(p, config);
  add_cluster_flags(p, config.cluster, true);
  if (auto stop = parse_flags(p, argc, argv, "actorllm serve")) return *stop;
  if (config.model.model.empty() && !config.models.many())
    config.model.model = "../shared/models/stories260K";
  if (auto errors = config.validate(); !errors.empty()) {
    std::fprintf(stderr, "actorllm serve: %s\n", errors.front().c_str());
    return exit_usage;
  }
  // The Responses API's store, read back from its folder before the model loads, so that a
  // folder it cannot use stops the server at once.
  auto responses = std::make_shared<api::response_store>(
      api::response_store_limits{config.server.responses_store_max_items,
                                 config.server.responses_store_max_bytes},
      [](const std::string& warning) { log_line("WARN", warning); });
  if (!config.server.responses_store_path.empty()) {
    if (auto error = responses->attach_folder(config.server.responses_store_path)) {
      std::fprintf(stderr, "actorllm serve: --responses-store-path: %s\n", error->c_str());
      return exit_usage;
    }
    log_line("INFO", std::to_string(responses->size()) + " stored responses read back from " +
                         config.server.responses_store_path);
  }
  const std::string cluster_host =
      config.cluster.host.empty() ? config.server.host : config.cluster.host;
  if (config.cluster.port >= 0) {
    if (auto why = config.cluster.refusal(cluster_host); !why.empty()) {
      std::fprintf(stderr, "actorllm serve: --cluster-port: %s\n", why.c_str());
      return exit_usage;
    }
  }

  // One model: one engine. Several: one engine each, behind the model directory.
  std::unique_ptr<engine_system> one;
  std::unique_ptr<model_engines> many;
  if (config.models.many()) {
    if (auto stop = load_models(config, many)) return *stop;
  } else {
    try {
      one = std::make_unique<engine_system>(config);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "actorllm serve: %s\n", e.what());
      return 1;
    }
    for (std::string line, text = one->setup().describe(); !text.empty();) {
      const auto nl = text.find('\n');
      line = text.substr(0, nl);
      text = nl == std::string::npos ? "" : text.substr(nl + 1);
      log_line("INFO", line);
    }
  }
  engine_port& port = one ? static_cast<engine_port&>(one->client()) : many->directory();
  if (config.cluster.port >= 0) {  // one model (load_models refused it with several)
    auto bound = one->publish(static_cast<uint16_t>(config.cluster.port), cluster_host,
                              config.cluster.secret);
    if (auto* port = std::get_if<uint16_t>(&bound))
      log_line("INFO", "workers may join on " + cluster_host + ":" + std::to_string(*port) +
                           (config.cluster.secret.empty() ? " (no secret: loopback only)"
                                                          : " (with the cluster secret)"));
    else
      log_line("ERROR", "cannot publish the router: " + std::get<std::string>(bound));
  }

  // Adds, drains and stops replicas for /admin and --autoscale; samples the replica gauges.
  // Several models load and unload at run time: each keeps the --replicas it was planned with,
  // and /admin/models is their door instead.
  std::unique_ptr<replica_manager> replicas;
  if (one) replicas = std::make_unique<replica_manager>(*one, config);
  if (config.autoscale.enabled())
    log_line("INFO", "autoscaling between " + std::to_string(config.autoscale.min_replicas) +
                         " and " + std::to_string(config.autoscale.max_replicas) + " replicas");

  net::http_options options;
  options.max_waiting_requests = config.scheduler.max_waiting_requests;
  options.responses = responses;
  if (many) options.models_admin = many.get();
  std::unique_ptr<net::http_server> server;
  try {
    server = std::make_unique<net::http_server>(config.server, port, options, replicas.get());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "actorllm serve: cannot listen on %s:%u: %s\n", config.server.host.c_str(),
                 config.server.port, e.what());
    return 1;
  }
  server->start();
  // --metrics-port: a second listener for scrapers that answers /metrics alone, so that it can
  // be exposed without exposing the API.
  std::unique_ptr<net::http_server> metrics_server;
  if (config.server.metrics_port != 0 && config.server.metrics_port != config.server.port) {
    server_config metrics_config = config.server;
    metrics_config.port = config.server.metrics_port;
    net::http_options quiet = options;
    quiet.access_log = false;
    quiet.metrics_only = true;
    try {
      metrics_server = std::make_unique<net::http_server>(metrics_config, port, quiet);
      metrics_server->start();
      log_line("INFO", "metrics also on " + metrics_server->url() + "/metrics");
    } catch (const std::exception& e) {
      log_line("ERROR", std::string("cannot listen on the metrics port: ") + e.what());
    }
  }
  if (!config.server.admin_api_key.empty())
    log_line("INFO", "admin API on " + server->url() +
                         (many ? "/admin/models" : "/admin/replicas") + " (admin key required)");
  log_line("INFO",
           "serving on " + server->url() + " (" +
               (many ? std::to_string(many->num_loaded()) + " of " +
                           std::to_string(many->directory().num_models()) + " models loaded, "
                     : std::string()) +
               "replicas " + std::to_string(config.parallel.replicas) + ", I/O threads " +
               std::to_string(config.server.io_threads) + ")");

  catch_stop_signals();
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  log_line("INFO", "shutting down: no new connections; in-flight requests are aborted");
  bound_shutdown("actorllm serve");
  if (metrics_server) metrics_server->stop();
  server->stop();
  replicas.reset();  // no change may start while the engine stops
  if (one) one->shutdown();
  if (many) many->shutdown();
  return 0;
}

const command_registration serve_command("serve",
                                         {"serve the OpenAI API over HTTP, SSE and WebSocket",
                                          run_serve});

}  // namespace
}  // namespace actorllm::app
