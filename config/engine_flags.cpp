#include "config/engine_flags.hpp"

#include <cstdio>
#include <fstream>

#include "config/served_models.hpp"
#include "config/vllm_flags.hpp"
#include "tool_calls/registry.hpp"

namespace actorllm {

void add_engine_flags(flag_parser& p, engine_config& c) {
  p.add("--model", "PATH|NAME=PATH",
        "Hugging Face model folder (also accepted as the first argument); serve: NAME=PATH "
        "adds a model served as NAME (repeat it for several)",
        [&c](std::string_view v) -> std::string {
          if (is_named_model(v)) return parse_named_model(v, c.models);
          c.model.model = std::string(v);
          return {};
        });
  p.on_positional("MODEL", [&c](std::string_view v) {
    c.model.model = std::string(v);
    return std::string();
  });
  p.add_string("--tokenizer", "tokenizer folder or tokenizer.json (default: the model's)",
               c.model.tokenizer);
  p.add_string(
      "--served-model-name",
      "model name in the API (default: the folder's name, with the --model argument also accepted)",
      c.model.served_model_name);
  p.add_string("--dtype",
               "weight dtype: auto (the checkpoint's; on CUDA a 16-bit checkpoint's type, else "
               "float32), float32, float16, "
               "bfloat16",
               c.model.dtype);
  p.add_string("--quantization",
               "none; int8: quantize the weights at load, one scale per output channel; int4: "
               "at load in groups of 32 (as Q4_0)",
               c.model.quantization);
  p.add_number("--max-model-len", "context length; 0: the model's max_position_embeddings",
               c.model.max_model_len);
  p.add_number("--seed", "global random seed", c.model.seed);
  p.add_string("--chat-template",
               "a .jinja file or tokenizer_config.json overriding the model's template",
               c.model.chat_template);
  p.add_string("--generation-config",
               "sampling defaults: auto (the model's generation_config.json), vllm (none), or a "
               "folder with a generation_config.json",
               c.model.generation_config);
  p.add_choice("--task", "generate (default), or embed: serve /v1/embeddings (prefix caching off)",
               c.model.task,
               {{"generate", std::string("generate")}, {"embed", std::string("embed")}});
  p.add("--override-pooler-config", "JSON",
        "embed: {\"pooling_type\":\"LAST\"|\"MEAN\",\"normalize\":true|false} (default LAST, "
        "normalized)",
        [&c](std::string_view v) { return parse_pooler_config(v, c.model); });
  p.add_number("--max-logprobs", "the most logprobs / top_logprobs a request may ask (default 20)",
               c.model.max_logprobs);

  p.add_string("--kv-cache-dtype",
               "KV cache element type: auto, float32, float16 or fp8 (E4M3); on CUDA auto "
               "(the activations' type) or fp8",
               c.cache.cache_dtype);
  p.add_number("--block-size", "tokens per KV cache block", c.cache.block_size);
  p.add_number("--swap-space", "CPU swap space for preempted sequences, GiB",
               c.cache.swap_space_gib);
  p.add_number(
      "--num-gpu-blocks-override",
      "exact number of blocks in the device KV pool (CPU backend too); -1: sized from memory",
      c.cache.num_gpu_blocks_override);
  p.add_number("--kv-cache-memory-bytes",
               "bytes of each worker's device KV pool (-1: sized from memory; "
               "--num-gpu-blocks-override wins)",
               c.cache.kv_cache_memory_bytes);
  p.add_number("--num-cpu-blocks-override",
               "exact number of CPU swap blocks; overrides --swap-space",
               c.cache.num_cpu_blocks_override);
  p.add_number("--kv-offload-bytes",
               "bytes of each worker's second KV tier: prefix blocks evicted from the device "
               "pool wait there and load back on a hit instead of being computed again (0: off)",
               c.cache.kv_offload_bytes);
  p.add_string("--kv-offload-dir",
               "keep the second KV tier in a file in this folder (the kernel may write it out to "
               "disk) instead of anonymous memory; needs --kv-offload-bytes",
               c.cache.kv_offload_dir);
  p.add_number("--gpu-memory-utilization",
               "share of device (or host) memory for weights and KV cache",
               c.cache.gpu_memory_utilization);
  p.add_bool("--enable-prefix-caching", "reuse the KV blocks of shared prompt prefixes",
             c.cache.enable_prefix_caching);

  p.add_number("--max-num-seqs", "sequences per step", c.scheduler.max_num_seqs);
  p.add_number("--max-num-batched-tokens", "token budget per step (prefill chunks + decodes)",
               c.scheduler.max_num_batched_tokens);
  p.add_number("--max-waiting-requests", "queue limit; beyond it new requests get 503",
               c.scheduler.max_waiting_requests);
  p.add_choice("--preemption-mode", "how to preempt when blocks run out (default recompute)",
               c.scheduler.preemption,
               {{"recompute", preemption_mode::recompute}, {"swap", preemption_mode::swap}});
  p.add_choice("--scheduling-policy", "order of admission (default fcfs)", c.scheduler.policy,
               {{"fcfs", scheduling_policy::fcfs}, {"priority", scheduling_policy::priority}});
  p.add_number("--stream-interval",
               "tokens gathered per streamed delta; the first and the last go out at once",
               c.scheduler.stream_interval);
  p.add_bool("--async-scheduling",
             "plan each step while the one before runs (--no-async-scheduling: plan after it)",
             c.scheduler.async_scheduling);
  p.add("--worker-timeout", "S",
        "seconds a step may go unanswered before its workers count as lost and their requests "
        "move to another replica (a stopped or frozen remote worker; default 300)",
        [&c](std::string_view v) -> std::string {
          double seconds = 0;
          if (auto e = parse_number(v, seconds); !e.empty()) return e;
          if (!(seconds >= 0.1 && seconds <= 86400)) return "must be in [0.1, 86400] seconds";
          c.scheduler.worker_timeout_s = seconds;
          return {};
        });

  p.add("--speculative-config", "JSON",
        "speculative decoding, as vLLM's: {\"method\":\"ngram\",\"num_speculative_tokens\":3,"
        "\"prompt_lookup_max\":4} or {\"model\":DRAFT_DIR,\"num_speculative_tokens\":4}",
        [&c](std::string_view v) { return parse_speculative_config(v, c.speculative); });

  p.add_bool("--enable-lora", "serve LoRA adapters over the base model", c.lora.enable_lora);
  p.add_values("--lora-modules", "NAME=PATH",
               "PEFT adapters served as model NAME (or {\"name\":…,\"path\":…}); implies "
               "--enable-lora",
               [&c](std::string_view v) { return parse_lora_module(v, c.lora); });
  p.add_number("--max-loras", "distinct LoRA adapters in one batch (default 1)", c.lora.max_loras);
  p.add_number("--max-lora-rank", "adapters of a higher rank are refused (default 16)",
               c.lora.max_lora_rank);
  p.add_bool("--enable-lora-runtime-updates",
             "POST /v1/load_lora_adapter and /v1/unload_lora_adapter while serving",
             c.lora.runtime_updates);

  p.add_number("--tensor-parallel-size", "workers per replica, each holding a shard",
               c.parallel.tensor_parallel_size);
  p.add_number("--replicas", "engine replicas behind one router", c.parallel.replicas);
  p.add_number("--data-parallel-size",
               "vLLM's name for --replicas: engine replicas behind one router, each with its "
               "own device(s) and KV cache",
               c.parallel.replicas);
  p.add_number("--cpu-threads", "threads for the CPU math; 0: all cores", c.parallel.cpu_threads);
  p.add_string("--cpu-bind",
               "none (default: the OS places the CPU math's threads) or cores (each worker's "
               "math threads bound to consecutive cores of the process's affinity mask)",
               c.parallel.cpu_bind);
  p.add_choice("--routing-policy",
               "how the router picks a replica: cache_aware (default: the longest cached prefix "
               "of the prompt, within --routing-balance-tokens of the least load), least_load, "
               "round_robin",
               c.parallel.routing,
               {{"cache_aware", routing_policy::cache_aware},
                {"least_load", routing_policy::least_load},
                {"round_robin", routing_policy::round_robin}});
  p.add_number("--routing-balance-tokens",
               "cache_aware: a replica with more of the prompt cached wins unless it owes more "
               "than this many tokens beyond the least-loaded one (default 16384)",
               c.parallel.routing_balance_tokens);
  p.add("--autoscale", "MIN:MAX", "replicas follow the load, between MIN and MAX",
        [&c](std::string_view v) -> std::string {
          const auto colon = v.find(':');
          if (colon == std::string_view::npos) return "must be MIN:MAX, as 1:4";
          int64_t lo = 0, hi = 0;
          if (!parse_number(v.substr(0, colon), lo).empty() ||
              !parse_number(v.substr(colon + 1), hi).empty())
            return "MIN and MAX must be whole numbers, as 1:4";
          if (lo < 1 || hi < lo || hi > 64) return "must have 1 <= MIN <= MAX <= 64";
          c.autoscale.min_replicas = static_cast<int32_t>(lo);
          c.autoscale.max_replicas = static_cast<int32_t>(hi);
          return {};
        });
  p.add_number("--autoscale-up-window", "seconds of high load before a replica is added",
               c.autoscale.up_window_s);
  p.add_number("--autoscale-down-window", "seconds of low load before a replica is drained",
               c.autoscale.down_window_s);
  p.add_number("--autoscale-cooldown", "seconds after a scale event before the next",
               c.autoscale.cooldown_s);
  p.add_string("--device", "auto, cpu or cuda", c.parallel.device);
  p.add_bool("--enforce-eager",
             "CUDA: launch every step's kernels one by one (default: decode steps replay CUDA "
             "graphs captured per batch size)",
             c.model.enforce_eager);
  p.add_number("--max-seq-len-to-capture",
               "CUDA: decode steps with a longer context run eagerly (default 8192)",
               c.model.max_seq_len_to_capture);
  add_vllm_compatibility_flags(p);
}

void add_models_flags(flag_parser& p, models_config& m) {
  p.add_string("--models-dir",
               "serve each sub-folder holding a config.json as a model named after the folder",
               m.models_dir);
  p.add_string("--model-config",
               "a JSON file mapping model names to their own flags, as "
               "{\"qwen\": {\"max_model_len\": 512, \"replicas\": 2}}",
               m.model_config_file);
  p.add_number("--models-kv-budget",
               "bytes of device KV cache the models share: each model's pools get an even "
               "share of what is left as it loads (0: min(free memory x "
               "--gpu-memory-utilization, 4 GiB))",
               m.kv_budget_bytes);
  p.add_number("--max-loaded-models",
               "at most N models loaded at once; a request for another unloads the least "
               "recently used idle one first (0: no limit; the rest load on demand)",
               m.max_loaded);
  p.add_number("--models-memory-budget",
               "bytes the loaded models' weights and KV pools may take together; past it the "
               "least recently used idle model is unloaded first (0: no limit)",
               m.memory_budget_bytes);
  p.add_number("--keep-alive", "unload a model idle this many seconds (0: keep it loaded)",
               m.keep_alive_s);
  p.add_number("--model-load-timeout",
               "seconds a request for a model that is not loaded waits for it to load "
               "(default 300)",
               m.load_timeout_s);
}

void add_output_parser_flags(flag_parser& p, engine_config& c) {
  p.add_flag("--enable-auto-tool-choice",
             "parse the model's tool calls for tool_choice \"auto\" (with --tool-call-parser)",
             [&c] { c.server.enable_auto_tool_choice = true; });
  p.add("--tool-call-parser", "NAME",
        "how the model writes tool calls: hermes, llama3_json, mistral or pythonic",
        [&c](std::string_view v) -> std::string {
          if (auto e = tool_calls::check_tool_call_parser_name(v)) return *e;
          c.server.tool_call_parser = std::string(v);
          return {};
        });
  p.add("--reasoning-parser", "NAME",
        "split <think> reasoning into reasoning_content: deepseek_r1 or qwen3",
        [&c](std::string_view v) -> std::string {
          if (auto e = tool_calls::check_reasoning_parser_name(v)) return *e;
          c.server.reasoning_parser = std::string(v);
          return {};
        });
}

void add_server_flags(flag_parser& p, engine_config& c) {
  p.add_string("--host", "address to listen on", c.server.host);
  p.add("--port", "N", "port to listen on (default 8000)", [&c](std::string_view v) -> std::string {
    int64_t port = 0;
    if (auto e = parse_number(v, port); !e.empty()) return e;
    if (port < 1 || port > 65535) return "must be in 1..65535";
    c.server.port = static_cast<uint16_t>(port);
    return {};
  });
  p.add_string("--api-key", "require 'Authorization: Bearer KEY' on /v1 endpoints",
               c.server.api_key);
  p.add_string("--admin-api-key",
               "enable /admin (replicas added, drained, stopped) behind 'Bearer KEY'",
               c.server.admin_api_key);
  p.add_strings("--allowed-origins", "CORS origins ('*' for any)", c.server.allowed_origins);
  p.add_strings("--allowed-hosts",
                "Host header names served besides IP addresses and localhost, e.g. the server's "
                "DNS name ('*' for any; refuses DNS rebinding otherwise)",
                c.server.allowed_hosts);
  p.add_string("--ssl-certfile", "serve HTTPS and WSS with this certificate chain (PEM)",
               c.server.ssl_certfile);
  p.add_string("--ssl-keyfile", "the key of --ssl-certfile (PEM)", c.server.ssl_keyfile);
  p.add_string("--ssl-ca-certs", "the CAs that client certificates are checked against",
               c.server.ssl_ca_certs);
  p.add_number("--ssl-cert-reqs",
               "client certificates: 0 not asked, 1 checked when sent, 2 required",
               c.server.ssl_cert_reqs);
  p.add_number("--max-body-bytes", "largest request body; larger gets 413",
               c.server.max_body_bytes);
  p.add_number("--io-threads", "network I/O threads", c.server.io_threads);
  p.add_string("--response-role", "the role of a chat completion's message",
               c.server.response_role);
  p.add_flag("--enable-force-include-usage",
             "every streamed answer ends with its usage, as if stream_options.include_usage",
             [&c] { c.server.force_include_usage = true; });
  p.add_number("--responses-store-max-items",
               "stored Responses API responses kept at most (least recently used evicted "
               "first; 0: none; default 1000)",
               c.server.responses_store_max_items);
  p.add_number("--responses-store-max-bytes",
               "bytes of stored responses (their JSON and input items) kept at most "
               "(default 256 MiB)",
               c.server.responses_store_max_bytes);
  p.add_string("--responses-store-path",
               "keep stored responses in this folder (one file each), so that they outlive a "
               "restart (default: in memory only)",
               c.server.responses_store_path);
  add_output_parser_flags(p, c);
  add_media_flags(p, c.server);
  p.add_flag("--disable-web-ui", "no web playground at / (API-only deployments)",
             [&c] { c.server.enable_web_ui = false; });
  p.add_number("--log-stats-interval", "seconds between stats log lines; 0: off",
               c.server.log_stats_interval);
  p.add_flag("--disable-log-stats", "no stats log lines (as --log-stats-interval 0)",
             [&c] { c.server.log_stats_interval = 0; });
  p.add("--metrics-port", "N", "also serve /metrics on this port (default: API port only)",
        [&c](std::string_view v) -> std::string {
          int64_t port = 0;
          if (auto e = parse_number(v, port); !e.empty()) return e;
          if (port < 0 || port > 65535) return "must be in 0..65535";
          c.server.metrics_port = static_cast<uint16_t>(port);
          return {};
        });
}

void add_cluster_flags(flag_parser& p, cluster_config& c, bool serving) {
  if (serving) {
    p.add_number("--cluster-port",
                 "publish the join point for `actorllm worker --connect` here (-1: off); "
                 "refused without --cluster-secret-file unless --cluster-insecure-loopback is "
                 "given and --cluster-host is a loopback address",
                 c.port);
    p.add_string("--cluster-host", "address the cluster port listens on (default: --host)", c.host);
  }
  p.add(
      "--cluster-secret-file", "PATH",
      "file holding the secret the server and its workers share (its first line; at least "
      "one character, ideally 32 random bytes); a worker without it is refused",
      [&c](std::string_view path) -> std::string {
        std::ifstream in{std::string(path)};
        if (!in) return "cannot read '" + std::string(path) + "'";
        std::string line;
        std::getline(in, line);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
          line.pop_back();
        if (line.empty()) return quoted(path) + " holds no secret";
        c.secret = std::move(line);
        return {};
      });
  p.add("--cluster-secret", "SECRET",
        "the shared secret itself (visible to other users in the process list: prefer "
        "--cluster-secret-file)",
        [&c](std::string_view v) -> std::string {
          if (v.empty()) return "must not be empty";
          c.secret = std::string(v);
          return {};
        });
  p.add_flag("--cluster-insecure-loopback",
             "join without a secret; refused unless the cluster port is on a loopback address "
             "(127.0.0.1, ::1, localhost), where only this machine's processes can reach it",
             [&c] { c.insecure_loopback = true; });
}

}  // namespace actorllm
