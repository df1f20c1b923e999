#include "monitoring/engine_view.hpp"

#include <nlohmann/json.hpp>

namespace actorllm {

namespace {

double ratio(int64_t part, int64_t whole) {
  return whole > 0 ? double(part) / double(whole) : 0.0;
}

nlohmann::ordered_json finished_json(const std::array<int64_t, 4>& f) {
  return {{"stop", f[0]}, {"length", f[1]}, {"abort", f[2]}, {"error", f[3]}};
}

}  // namespace

std::string engine_view_json(const std::string& model, double unix_time,
                             const std::vector<replica_view_row>& replicas,
                             const std::vector<std::pair<std::string, double>>& actors,
                             const router_view_row& router) {
  nlohmann::ordered_json out;
  out["object"] = "engine.stats";
  out["model"] = model;
  out["time"] = unix_time;
  auto& rows = out["replicas"] = nlohmann::ordered_json::array();
  std::array<int64_t, 4> finished{};
  int64_t prompt_tokens = 0, generation_tokens = 0;
  for (const auto& r : replicas) {
    rows.push_back({{"id", r.id},
                    {"state", r.state},
                    {"device", r.device},
                    {"num_waiting", r.num_waiting},
                    {"num_running", r.num_running},
                    {"num_swapped", r.num_swapped},
                    {"kv_cache_usage", r.kv_cache_usage},
                    {"cpu_cache_usage", r.cpu_cache_usage},
                    {"prefix_cache_hit_rate", ratio(r.prefix_cache_hits, r.prefix_cache_queries)},
                    {"tier_cache_hit_rate", ratio(r.tier_cache_hits, r.tier_cache_queries)},
                    {"kv_offload_usage", r.tier_usage},
                    {"kv_offload_failed_loads", r.tier_failed_loads},
                    {"num_preemptions", r.num_preemptions},
                    {"step_seconds", r.step_seconds},
                    {"tokens_per_step", r.tokens_per_step},
                    {"num_steps", r.num_steps},
                    {"prompt_tokens", r.prompt_tokens},
                    {"generation_tokens", r.generation_tokens},
                    {"requests_finished", finished_json(r.finished)}});
    for (size_t i = 0; i < finished.size(); ++i) finished[i] += r.finished[i];
    prompt_tokens += r.prompt_tokens;
    generation_tokens += r.generation_tokens;
  }
  auto& listed = out["actors"] = nlohmann::ordered_json::array();
  for (const auto& [name, depth] : actors)
    listed.push_back({{"name", name}, {"mailbox_depth", static_cast<int64_t>(depth)}});
  nlohmann::ordered_json decisions = nlohmann::ordered_json::object();
  for (const auto& [reason, count] : router.decisions) decisions[reason] = count;
  out["router"] = {{"decisions", std::move(decisions)},
                   {"prompt_blocks", router.prompt_blocks},
                   {"cached_blocks", router.cached_blocks},
                   {"cache_hit_ratio", ratio(router.cached_blocks, router.prompt_blocks)}};
  out["totals"] = {{"prompt_tokens", prompt_tokens},
                   {"generation_tokens", generation_tokens},
                   {"requests_finished", finished_json(finished)}};
  return out.dump();
}

}  // namespace actorllm
