#pragma once
/// The live engine view, as the web page's engine tab and any script read it:
/// `GET /v1/engine/stats`. Plain values gathered from the metrics (thread-safe reads), turned
/// into one JSON object:
///
///   {"object": "engine.stats", "model", "time" (unix seconds),
///    "replicas": [{"id", "state", "device", "num_waiting", "num_running", "num_swapped",
///                  "kv_cache_usage", "cpu_cache_usage", "prefix_cache_hit_rate",
///                  "tier_cache_hit_rate", "kv_offload_usage", "kv_offload_failed_loads",
///                  "num_preemptions", "step_seconds", "tokens_per_step", "num_steps",
///                  "prompt_tokens", "generation_tokens",
///                  "requests_finished": {"stop", "length", "abort", "error"}}],
///    "actors": [{"name", "mailbox_depth"}],
///    "router": {"decisions": {reason: count}, "prompt_blocks", "cached_blocks",
///               "cache_hit_ratio"},
///    "totals": {"prompt_tokens", "generation_tokens", "requests_finished": {...}}}
///
/// Counters are cumulative since start; a replica stays listed (state dead) once stopped.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace actorllm {

/// One replica's numbers, as its engine_metrics last saw them.
struct replica_view_row {
  int32_t id = 0;
  std::string state = "serving";  ///< starting, serving, draining or dead
  std::string device;             ///< empty when unknown
  int32_t num_waiting = 0;
  int32_t num_running = 0;
  int32_t num_swapped = 0;
  double kv_cache_usage = 0.0;
  double cpu_cache_usage = 0.0;
  int64_t prefix_cache_queries = 0;  ///< tokens
  int64_t prefix_cache_hits = 0;     ///< tokens
  int64_t tier_cache_queries = 0;    ///< tokens the device missed, looked up in the second tier
  int64_t tier_cache_hits = 0;       ///< tokens
  double tier_usage = 0;             ///< share of the second tier's blocks in use
  int64_t tier_failed_loads = 0;     ///< blocks
  int64_t num_preemptions = 0;
  double step_seconds = 0.0;    ///< the last step's
  int32_t tokens_per_step = 0;  ///< the last step's
  int64_t num_steps = 0;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  std::array<int64_t, 4> finished{};  ///< stop, length, abort, error
};

/// The request router's decisions since start (routing_metrics).
struct router_view_row {
  std::vector<std::pair<std::string, int64_t>> decisions;  ///< (reason, requests)
  int64_t prompt_blocks = 0;  ///< full prompt blocks of the routed requests
  int64_t cached_blocks = 0;  ///< of those, held by the replica chosen
};

/// The JSON body of GET /v1/engine/stats.
std::string engine_view_json(const std::string& model, double unix_time,
                             const std::vector<replica_view_row>& replicas,
                             const std::vector<std::pair<std::string, double>>& actors,
                             const router_view_row& router = {});

}  // namespace actorllm
