#pragma once
/// The metrics of one engine replica, fed by its scheduler shell with what the scheduler core
/// already returns (scheduler_stats, step_plan, request_output) and the shell's clock:
///
///   metrics.on_request_added(id, params.n, now_seconds());   // add_request accepted
///   metrics.on_constrained_request();                        // ... with structured output
///   metrics.on_masks(result.mask_seconds);                   // a step with constrained draws
///   metrics.on_scheduled(plan, now_seconds());               // after schedule()
///   metrics.on_outputs(outputs, now_seconds());              // after update() or abort()
///   metrics.on_step(core.stats(), step_seconds);             // after update()
///   metrics.on_stats(core.stats());                          // after add_request / abort when
///   idle
///
/// Series carry the labels model_name and replica. Gauges hold the last stats given (values
/// are current, not averages); counters that the core reports cumulatively
/// (preemptions, prefix-cache queries and hits) advance by the difference.
///
/// Not thread-safe: one owner (the scheduler shell). Rendering from other threads is safe.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/engine_stats.hpp"
#include "monitoring/engine_view.hpp"
#include "monitoring/metrics_registry.hpp"
#include "monitoring/request_timeline.hpp"
#include "monitoring/stats_logger.hpp"

namespace actorllm {

struct engine_labels {
  std::string model_name;
  int32_t replica = 0;
  /// Top of the token-count buckets (1, 2, 5, 10, ... up to it): the served context length.
  /// 0 leaves those histograms with the +Inf bucket only.
  int32_t max_model_len = 0;
};

class engine_metrics {
 public:
  engine_metrics(metrics_registry& registry, const engine_labels& labels);
  /// Takes this replica's series out of the registry (which must outlive it).
  ~engine_metrics();
  engine_metrics(const engine_metrics&) = delete;
  engine_metrics& operator=(const engine_metrics&) = delete;

  void on_request_added(const std::string& request_id, int32_t n, double now);
  /// An accepted request asks for structured output.
  void on_constrained_request() { structured_requests_.Increment(); }
  /// A step computed structured-output masks for `seconds` (beside its forward pass).
  void on_masks(double seconds) { mask_time_.Observe(seconds); }
  /// An accepted request brought `num_images` images filling `num_tokens` prompt positions.
  void on_images(int32_t num_images, int64_t num_tokens) {
    prompt_images_.Increment(num_images);
    prompt_image_tokens_.Increment(static_cast<double>(num_tokens));
  }
  /// A step encoded `num_images` images through the vision tower in `seconds`.
  void on_encoder(int32_t num_images, double seconds) {
    encoded_images_.Increment(num_images);
    encoder_time_.Observe(seconds);
  }
  void on_scheduled(const step_plan& plan, double now);
  void on_outputs(const std::vector<request_output>& outputs, double now);
  /// Gauges and cumulative counters from the core's stats after a step, plus the step's
  /// histograms (tokens scheduled, duration from schedule() to update()).
  void on_step(const scheduler_stats& stats, double step_seconds);
  /// Gauges and cumulative counters only, for changes outside a step.
  void on_stats(const scheduler_stats& stats);
  /// The replica is gone: its gauges read zero (requests, KV usage, free and cached blocks),
  /// and the requests it was timing are dropped, so that nothing shows a dead replica's last
  /// state as current. Counters and histograms keep what they counted.
  void on_replica_down();
  /// Records one finished request (on_outputs calls it; public for shells that time
  /// requests themselves).
  void on_request_finished(const finished_request& request);

  /// Cumulative token counts and the last stats, for the stats log line.
  stats_snapshot snapshot(double now) const;
  /// The numbers of the engine view (id, state and device left to the caller). Any thread.
  replica_view_row view() const;

 private:
  struct pool_gauges {
    prometheus::Gauge* num_free;
    prometheus::Gauge* num_cached;
  };
  static constexpr std::size_t num_finish_reasons = 4;  // stop, length, abort, error

  engine_metrics(metrics_registry& registry, const engine_labels& labels,
                 const prometheus::Labels& base);

  /// One per series this object added: removes it (first member, so the series it removes
  /// are added after it exists and removed before the references below dangle).
  std::vector<std::function<void()>> removers_;
  request_timeline timeline_;
  std::atomic<double> last_step_seconds_{0.0};
  std::atomic<int32_t> last_step_tokens_{0};
  std::atomic<int64_t> num_steps_{0};
  scheduler_stats last_{};
  int64_t num_prompt_tokens_ = 0;
  int64_t num_generation_tokens_ = 0;

  prometheus::Gauge& num_running_;
  prometheus::Gauge& num_waiting_;
  prometheus::Gauge& num_swapped_;
  prometheus::Gauge& kv_usage_;
  prometheus::Gauge& cpu_kv_usage_;
  pool_gauges device_;
  pool_gauges cpu_;
  prometheus::Counter& num_preemptions_;
  prometheus::Counter& prefix_queries_;
  prometheus::Counter& prefix_hits_;
  // The second KV tier: vLLM's external_prefix_cache_* (what its KV connectors hit), and the
  // tier's own use.
  prometheus::Counter& tier_queries_;
  prometheus::Counter& tier_hits_;
  prometheus::Gauge& tier_usage_;
  prometheus::Counter& tier_stored_;
  prometheus::Counter& tier_loaded_;
  prometheus::Counter& tier_evicted_;
  prometheus::Counter& tier_failed_;
  prometheus::Counter& prompt_tokens_;
  prometheus::Counter& generation_tokens_;
  std::array<prometheus::Counter*, num_finish_reasons> success_{};
  prometheus::Histogram& iteration_tokens_;
  prometheus::Histogram& step_duration_;
  prometheus::Histogram& ttft_;
  prometheus::Histogram& itl_;
  prometheus::Histogram& e2e_;
  prometheus::Histogram& queue_time_;
  prometheus::Histogram& prefill_time_;
  prometheus::Histogram& decode_time_;
  prometheus::Histogram& inference_time_;
  prometheus::Histogram& request_prompt_tokens_;
  prometheus::Histogram& request_generation_tokens_;
  prometheus::Counter& structured_requests_;
  prometheus::Histogram& mask_time_;
  prometheus::Counter& prompt_images_;
  prometheus::Counter& prompt_image_tokens_;
  prometheus::Counter& encoded_images_;
  prometheus::Histogram& encoder_time_;
  // Speculative decoding (vLLM's spec_decode_* counters); a position's series appears with
  // the first draft verified there.
  prometheus::Counter& spec_drafts_;
  prometheus::Counter& spec_draft_tokens_;
  prometheus::Counter& spec_accepted_tokens_;
  prometheus::Family<prometheus::Counter>& spec_accepted_per_position_family_;
  std::vector<prometheus::Counter*> spec_accepted_per_position_;
  prometheus::Labels base_labels_;
};

}  // namespace actorllm
