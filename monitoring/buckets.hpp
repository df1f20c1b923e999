#pragma once
/// Histogram bucket boundaries, the same as vLLM's so that dashboards and alerts written for
/// vLLM read ours the same way.
#include <vector>

namespace actorllm::buckets {

/// time_to_first_token_seconds.
std::vector<double> time_to_first_token();
/// inter_token_latency_seconds (vLLM's time_per_output_token_seconds).
std::vector<double> inter_token_latency();
/// e2e_request_latency_seconds and request_queue_time_seconds.
std::vector<double> request_latency();
/// step_duration_seconds: one engine step, from well under a millisecond (a tiny model on a
/// GPU) to seconds (a long prefill on a CPU).
std::vector<double> step_duration();
/// structured_output_mask_seconds: a step's masks, from microseconds (warm caches) to tens of
/// milliseconds (a grammar's first visits to its states).
std::vector<double> mask_time();
/// Token counts: 1, 2, 5, 10, 20, 50, ... up to and including `max_value` where it is one of
/// them (vLLM's build_1_2_5_buckets). Empty when max_value < 1.
std::vector<double> one_two_five(double max_value);

}  // namespace actorllm::buckets
