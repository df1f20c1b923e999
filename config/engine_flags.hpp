#pragma once
/// vLLM's flag names for every part of engine_config, shared by `serve`, `generate`, bench.
#include "config/engine_config.hpp"
#include "config/flag_parser.hpp"

namespace actorllm {

/// --enable-auto-tool-choice, --tool-call-parser and --reasoning-parser: how a model's output
/// is read (a server flag, and a model's own in --model-config).
void add_output_parser_flags(flag_parser& p, engine_config& c);

/// Model, cache, scheduler and parallel flags (what every engine-running command takes).
void add_engine_flags(flag_parser& parser, engine_config& config);
/// Serve's flags for several models: --models-dir and --model-config (--model NAME=PATH is
/// add_engine_flags' --model; config/served_models.hpp plans them).
void add_models_flags(flag_parser& parser, models_config& models);
/// Server flags (host, port, api key, CORS, limits, metrics, and add_media_flags').
void add_server_flags(flag_parser& parser, engine_config& config);
/// The images of prompts: --limit-mm-per-prompt, --allowed-local-media-path,
/// --allowed-media-domains, --media-fetch-timeout, --max-image-bytes (config/media_config.cpp).
void add_media_flags(flag_parser& parser, server_config& server);
/// The cluster's flags: the shared secret (--cluster-secret-file, --cluster-secret) and
/// --cluster-insecure-loopback; with `serving`, also --cluster-port and --cluster-host.
void add_cluster_flags(flag_parser& parser, cluster_config& cluster, bool serving);
/// add_engine_flags also adds vLLM's launch flags that are accepted or refused here
/// (config/vllm_flags.hpp).

}  // namespace actorllm
