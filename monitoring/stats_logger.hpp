#pragma once
/// vLLM's periodic stats line, as a pure function of snapshots over time:
///
///   Avg prompt throughput: 512.0 tokens/s, Avg generation throughput: 96.3 tokens/s,
///   Running: 4 reqs, Swapped: 0 reqs, Pending: 2 reqs, GPU KV cache usage: 37.5%,
///   CPU KV cache usage: 0.0%.
///
/// (one line), followed, where speculative decoding verified drafts since the last line, by
///
///   Speculative decoding: draft acceptance rate: 41.2%, mean acceptance length: 2.24,
///   drafted: 320 tokens, accepted: 132 tokens.
///
/// (one line). Throughputs average the token counters over the time since the previous line.
/// The shell takes a snapshot when it likes (each step, a timer) and prints what comes back.
#include <cstdint>
#include <optional>
#include <string>

namespace actorllm {

struct stats_snapshot {
  double now = 0.0;                   ///< seconds, one monotonic clock
  int64_t num_prompt_tokens = 0;      ///< cumulative since start
  int64_t num_generation_tokens = 0;  ///< cumulative since start
  int32_t num_running = 0;
  int32_t num_swapped = 0;
  int32_t num_waiting = 0;
  double gpu_kv_cache_usage = 0.0;  ///< 0..1
  double cpu_kv_cache_usage = 0.0;  ///< 0..1
  int64_t num_drafts = 0;           ///< speculative verifications, cumulative
  int64_t num_draft_tokens = 0;     ///< cumulative
  int64_t num_accepted_tokens = 0;  ///< cumulative
};

/// The line for `current`, with throughputs over the `seconds` since `previous`.
std::string format_stats_line(const stats_snapshot& previous, const stats_snapshot& current);

class stats_logger {
 public:
  /// interval_seconds <= 0 turns the line off (--log-stats-interval 0).
  explicit stats_logger(double interval_seconds) : interval_(interval_seconds) {}

  /// The line when at least the interval has passed since the last line (or since the first
  /// snapshot, which only starts the clock); nothing otherwise.
  std::optional<std::string> on_snapshot(const stats_snapshot& snapshot);

 private:
  double interval_;
  std::optional<stats_snapshot> last_;  // at the last line
};

}  // namespace actorllm
