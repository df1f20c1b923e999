#pragma once
/// Per-request timing for the latency histograms, kept apart from Prometheus so that it can
/// be tested with made-up clocks. The scheduler shell feeds it what it already has: the
/// arrival, each step_plan (first scheduling), each batch of request_outputs; it returns the
/// observations to record. Times are seconds on one monotonic clock (see now_seconds()).
///
/// Not thread-safe: one owner (the scheduler shell of one replica).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/generate_request.hpp"
#include "common/step_plan.hpp"

namespace actorllm {

/// Seconds on the steady clock: the `now` the shells pass to the metric handles.
double now_seconds();

/// What one request measured once its last choice finished.
struct finished_request {
  finish_reason reason = finish_reason::none;  ///< of the choice that finished last
  int32_t num_prompt_tokens = 0;
  int32_t num_generation_tokens = 0;  ///< all choices together
  double e2e_seconds = 0.0;           ///< arrival to the last finish
  // vLLM's phases, for a request that was scheduled (and, for the first two, got a token):
  std::optional<double> prefill_seconds;    ///< first scheduling to first token
  std::optional<double> decode_seconds;     ///< first token to the last finish
  std::optional<double> inference_seconds;  ///< first scheduling to the last finish
};

/// Observations from one batch of outputs.
struct timeline_update {
  int64_t num_prompt_tokens = 0;            ///< of requests that produced their first token now
  int64_t num_generation_tokens = 0;        ///< new tokens, all choices (from cumulative counts)
  std::vector<double> time_to_first_token;  ///< arrival to first token, one per request
  std::vector<double> inter_token_latency;  ///< gap since a choice's previous token
  std::vector<finished_request> finished;
};

class request_timeline {
 public:
  /// A request admitted at `now` with `num_choices` (its n) choices to finish.
  void on_added(const std::string& request_id, int32_t num_choices, double now);
  /// Queue times (arrival to first scheduling) of requests the plan schedules for the first
  /// time; a sequence scheduled again after preemption is not queued again.
  std::vector<double> on_scheduled(const step_plan& plan, double now);
  /// Token counts and latencies of one batch of scheduler outputs (update() or abort()).
  /// Outputs of requests never added are counted as if added now with one choice.
  timeline_update on_outputs(const std::vector<request_output>& outputs, double now);

  /// Requests added and not yet finished.
  std::size_t num_tracked() const { return requests_.size(); }

 private:
  struct choice {
    int32_t num_generated = 0;            // cumulative, as last reported
    std::optional<double> last_token_at;  // for the inter-token gap
    bool finished = false;
  };
  struct timing {
    double arrived_at = 0.0;
    bool scheduled = false;
    double scheduled_at = 0.0;  // the first scheduling
    bool first_token_seen = false;
    double first_token_at = 0.0;
    int32_t num_open_choices = 1;
    std::vector<choice> choices;  // by choice index
  };

  timing& find_or_add(const std::string& request_id, double now);
  void apply(const request_output& output, timing& t, double now, timeline_update& update);

  std::unordered_map<std::string, timing> requests_;
};

}  // namespace actorllm
