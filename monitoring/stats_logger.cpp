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
  return line;
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
