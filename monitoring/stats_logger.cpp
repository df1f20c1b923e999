#include "monitoring/stats_logger.hpp"

#include <cstdio>

namespace actorllm {

std::string format_stats_line(const stats_snapshot& previous, const stats_snapshot& current) {
  double seconds = current.now - previous.now;
  auto rate = [seconds](int64_t before, int64_t after) {
    return seconds > 0.0 ? static_cast<double>(after - before) / seconds : 0.0;
  };
  char line[320];
  std::snprintf(line, sizeof line,
                "Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, "
                "Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, "
                "GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%.",
                rate(previous.num_prompt_tokens, current.num_prompt_tokens),
                rate(previous.num_generation_tokens, current.num_generation_tokens),
                current.num_running, current.num_swapped, current.num_waiting,
                current.gpu_kv_cache_usage * 100.0, current.cpu_kv_cache_usage * 100.0);
  const int64_t drafts = current.num_drafts - previous.num_drafts;
  const int64_t drafted = current.num_draft_tokens - previous.num_draft_tokens;
  const int64_t accepted = current.num_accepted_tokens - previous.num_accepted_tokens;
  if (drafts <= 0 || drafted <= 0) return line;
  // Mean acceptance length: tokens one verification gives, its accepted drafts plus one.
  char spec[200];
  std::snprintf(spec, sizeof spec,
                " Speculative decoding: draft acceptance rate: %.1f%%, mean acceptance length: "
                "%.2f, drafted: %lld tokens, accepted: %lld tokens.",
                100.0 * static_cast<double>(accepted) / static_cast<double>(drafted),
                1.0 + static_cast<double>(accepted) / static_cast<double>(drafts),
                static_cast<long long>(drafted), static_cast<long long>(accepted));
  return std::string(line) + spec;
}

std::optional<std::string> stats_logger::on_snapshot(const stats_snapshot& snapshot) {
  if (interval_ <= 0.0) return std::nullopt;
  if (!last_) {
    last_ = snapshot;
    return std::nullopt;
  }
  if (snapshot.now - last_->now < interval_) return std::nullopt;
  std::string line = format_stats_line(*last_, snapshot);
  last_ = snapshot;
  return line;
}

}  // namespace actorllm
