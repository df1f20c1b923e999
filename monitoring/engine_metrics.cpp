#include "monitoring/engine_metrics.hpp"

#include <algorithm>
#include <functional>

#include "monitoring/buckets.hpp"

namespace actorllm {
namespace {

using prometheus::Labels;

Labels with(Labels labels, const std::string& name, const std::string& value) {
  labels.emplace(name, value);
  return labels;
}

// The cumulative counts the core reports since it started; a Prometheus counter only grows,
// so it advances by the difference. A smaller value means the core restarted from zero.
void advance(prometheus::Counter& counter, int64_t before, int64_t now) {
  counter.Increment(static_cast<double>(now >= before ? now - before : now));
}

constexpr finish_reason finish_reasons[] = {finish_reason::stop, finish_reason::length,
                                            finish_reason::abort, finish_reason::error};

/// Adds the series `labels` (with `args`) to `family`, and how to take it out again.
template <class T, class... Args>
T& add(prometheus::Family<T>& family, std::vector<std::function<void()>>& removers,
       const Labels& labels, Args&&... args) {
  T& series = family.Add(labels, std::forward<Args>(args)...);
  removers.push_back([&family, &series] { family.Remove(&series); });
  return series;
}

}  // namespace

engine_metrics::engine_metrics(metrics_registry& r, const engine_labels& labels)
    : engine_metrics(
          r, labels,
          Labels{{"model_name", labels.model_name}, {"replica", std::to_string(labels.replica)}}) {}

engine_metrics::~engine_metrics() {
  for (auto& remove : removers_) remove();
}

engine_metrics::engine_metrics(metrics_registry& r, const engine_labels& labels,
                               const prometheus::Labels& base)
    : removers_(),
      num_running_(
          add(r.gauge("num_requests_running", "Requests in the running queue."), removers_, base)),
      num_waiting_(add(r.gauge("num_requests_waiting", "Requests waiting to be scheduled."),
                       removers_, base)),
      num_swapped_(add(r.gauge("num_requests_swapped", "Requests swapped out to the CPU."),
                       removers_, base)),
      kv_usage_(add(
          r.gauge("kv_cache_usage_perc", "Share of device KV-cache blocks in use (1 means 100%)."),
          removers_, base)),
      cpu_kv_usage_(add(r.gauge("cpu_kv_cache_usage_perc",
                                "Share of CPU (swap) KV-cache blocks in use (1 means 100%)."),
                        removers_, base)),
      num_preemptions_(
          add(r.counter("num_preemptions_total", "Preemptions since start."), removers_, base)),
      prefix_queries_(
          add(r.counter("prefix_cache_queries_total", "Tokens looked up in the prefix cache."),
              removers_, base)),
      prefix_hits_(add(r.counter("prefix_cache_hits_total", "Tokens found in the prefix cache."),
                       removers_, base)),
      tier_queries_(add(r.counter("external_prefix_cache_queries_total",
                                  "Tokens the device prefix cache missed, looked up in the second "
                                  "KV tier (--kv-offload-bytes)."),
                        removers_, base)),
      tier_hits_(add(r.counter("external_prefix_cache_hits_total",
                               "Tokens found in the second KV tier and loaded back."),
                     removers_, base)),
      tier_usage_(add(r.gauge("kv_offload_usage_perc",
                              "Share of the second KV tier's blocks in use (1 means 100%)."),
                      removers_, base)),
      tier_stored_(
          add(r.counter("kv_offload_stored_blocks_total",
                        "Prefix blocks evicted from the device pool into the second tier."),
              removers_, base)),
      tier_loaded_(add(r.counter("kv_offload_loaded_blocks_total",
                                 "Blocks loaded back from the second tier for a prefix hit."),
                       removers_, base)),
      tier_evicted_(
          add(r.counter("kv_offload_evicted_blocks_total",
                        "Blocks dropped from the full second tier (least recently used)."),
              removers_, base)),
      tier_failed_(add(r.counter("kv_offload_failed_loads_total",
                                 "Loads from the second tier whose contents did not match what was "
                                 "stored: computed again instead."),
                       removers_, base)),
      prompt_tokens_(
          add(r.counter("prompt_tokens_total", "Prefill tokens processed."), removers_, base)),
      generation_tokens_(
          add(r.counter("generation_tokens_total", "Tokens generated."), removers_, base)),
      iteration_tokens_(add(r.histogram("iteration_tokens_total", "Tokens scheduled per step."),
                            removers_, base, buckets::one_two_five(labels.max_model_len))),
      step_duration_(add(
          r.histogram("step_duration_seconds", "Duration of one engine step, schedule to update."),
          removers_, base, buckets::step_duration())),
      ttft_(add(r.histogram("time_to_first_token_seconds", "Arrival to first token."), removers_,
                base, buckets::time_to_first_token())),
      itl_(add(r.histogram("inter_token_latency_seconds",
                           "Time between consecutive tokens of one choice."),
               removers_, base, buckets::inter_token_latency())),
      e2e_(add(r.histogram("e2e_request_latency_seconds", "Arrival to the last token."), removers_,
               base, buckets::request_latency())),
      queue_time_(add(r.histogram("request_queue_time_seconds", "Arrival to first scheduling."),
                      removers_, base, buckets::request_latency())),
      prefill_time_(
          add(r.histogram("request_prefill_time_seconds", "First scheduling to first token."),
              removers_, base, buckets::request_latency())),
      decode_time_(add(r.histogram("request_decode_time_seconds", "First token to the last token."),
                       removers_, base, buckets::request_latency())),
      inference_time_(
          add(r.histogram("request_inference_time_seconds", "First scheduling to the last token."),
              removers_, base, buckets::request_latency())),
      request_prompt_tokens_(
          add(r.histogram("request_prompt_tokens", "Prompt tokens per finished request."),
              removers_, base, buckets::one_two_five(labels.max_model_len))),
      request_generation_tokens_(
          add(r.histogram("request_generation_tokens", "Generated tokens per finished request."),
              removers_, base, buckets::one_two_five(labels.max_model_len))),
      structured_requests_(
          add(r.counter("structured_output_requests_total",
                        "Requests whose output follows a schema, regex, choice list or "
                        "grammar."),
              removers_, base)),
      mask_time_(
          add(r.histogram("structured_output_mask_seconds",
                          "Time one step spent computing structured-output token masks (beside "
                          "the forward pass)."),
              removers_, base, buckets::mask_time())),
      prompt_images_(
          add(r.counter("prompt_images_total", "Images in the prompts of accepted requests."),
              removers_, base)),
      prompt_image_tokens_(
          add(r.counter("prompt_image_tokens_total",
                        "Prompt positions filled by images (their embedding rows)."),
              removers_, base)),
      encoded_images_(add(r.counter("encoder_images_total",
                                    "Images run through the vision tower (encoder cache misses)."),
                          removers_, base)),
      encoder_time_(add(r.histogram("encoder_seconds",
                                    "Time one step spent in the vision tower (steps that ran it)."),
                        removers_, base, buckets::step_duration())),
      spec_drafts_(add(r.counter("spec_decode_num_drafts_total",
                                 "Speculative decoding: verifications (a sequence's drafts checked "
                                 "in one step)."),
                       removers_, base)),
      spec_draft_tokens_(add(r.counter("spec_decode_num_draft_tokens_total",
                                       "Speculative decoding: draft tokens verified."),
                             removers_, base)),
      spec_accepted_tokens_(add(r.counter("spec_decode_num_accepted_tokens_total",
                                          "Speculative decoding: draft tokens accepted."),
                                removers_, base)),
      spec_accepted_per_position_family_(
          r.counter("spec_decode_num_accepted_tokens_per_pos_total",
                    "Speculative decoding: draft tokens accepted, by draft position (0: the "
                    "first draft after the sequence's token).")),
      base_labels_(base) {
  auto& free_blocks = r.gauge("num_free_blocks", "Empty KV-cache blocks, by pool.");
  auto& cached_blocks =
      r.gauge("num_cached_blocks", "Unreferenced blocks still holding a reusable prefix, by pool.");
  device_ = {&add(free_blocks, removers_, with(base, "pool", "device")),
             &add(cached_blocks, removers_, with(base, "pool", "device"))};
  cpu_ = {&add(free_blocks, removers_, with(base, "pool", "cpu")),
          &add(cached_blocks, removers_, with(base, "pool", "cpu"))};
  // Every reason exists from the start, at 0, so that rate() sees the first request.
  auto& success = r.counter("request_success_total", "Finished requests, by finish reason.");
  for (std::size_t i = 0; i < num_finish_reasons; ++i)
    success_[i] =
        &add(success, removers_, with(base, "finished_reason", to_string(finish_reasons[i])));
}

void engine_metrics::on_request_added(const std::string& request_id, int32_t n, double now) {
  timeline_.on_added(request_id, n, now);
}

void engine_metrics::on_scheduled(const step_plan& plan, double now) {
  for (double seconds : timeline_.on_scheduled(plan, now)) queue_time_.Observe(seconds);
}

void engine_metrics::on_outputs(const std::vector<request_output>& outputs, double now) {
  timeline_update update = timeline_.on_outputs(outputs, now);
  num_prompt_tokens_ += update.num_prompt_tokens;
  num_generation_tokens_ += update.num_generation_tokens;
  prompt_tokens_.Increment(static_cast<double>(update.num_prompt_tokens));
  generation_tokens_.Increment(static_cast<double>(update.num_generation_tokens));
  for (double seconds : update.time_to_first_token) ttft_.Observe(seconds);
  for (double seconds : update.inter_token_latency) itl_.Observe(seconds);
  for (const finished_request& request : update.finished) on_request_finished(request);
}

void engine_metrics::on_request_finished(const finished_request& request) {
  for (std::size_t i = 0; i < num_finish_reasons; ++i)
    if (finish_reasons[i] == request.reason) success_[i]->Increment();
  e2e_.Observe(request.e2e_seconds);
  if (request.prefill_seconds) prefill_time_.Observe(*request.prefill_seconds);
  if (request.decode_seconds) decode_time_.Observe(*request.decode_seconds);
  if (request.inference_seconds) inference_time_.Observe(*request.inference_seconds);
  request_prompt_tokens_.Observe(request.num_prompt_tokens);
  request_generation_tokens_.Observe(request.num_generation_tokens);
}

void engine_metrics::on_step(const scheduler_stats& stats, double step_seconds) {
  on_stats(stats);
  iteration_tokens_.Observe(stats.num_scheduled_tokens);
  step_duration_.Observe(step_seconds);
  last_step_seconds_.store(step_seconds, std::memory_order_relaxed);
  last_step_tokens_.store(stats.num_scheduled_tokens, std::memory_order_relaxed);
  num_steps_.fetch_add(1, std::memory_order_relaxed);
}

replica_view_row engine_metrics::view() const {
  const auto count = [](const prometheus::Counter& c) { return static_cast<int64_t>(c.Value()); };
  replica_view_row r;
  r.num_waiting = static_cast<int32_t>(num_waiting_.Value());
  r.num_running = static_cast<int32_t>(num_running_.Value());
  r.num_swapped = static_cast<int32_t>(num_swapped_.Value());
  r.kv_cache_usage = kv_usage_.Value();
  r.cpu_cache_usage = cpu_kv_usage_.Value();
  r.prefix_cache_queries = count(prefix_queries_);
  r.prefix_cache_hits = count(prefix_hits_);
  r.tier_cache_queries = count(tier_queries_);
  r.tier_cache_hits = count(tier_hits_);
  r.tier_usage = tier_usage_.Value();
  r.tier_failed_loads = count(tier_failed_);
  r.num_preemptions = count(num_preemptions_);
  r.step_seconds = last_step_seconds_.load(std::memory_order_relaxed);
  r.tokens_per_step = last_step_tokens_.load(std::memory_order_relaxed);
  r.num_steps = num_steps_.load(std::memory_order_relaxed);
  r.prompt_tokens = count(prompt_tokens_);
  r.generation_tokens = count(generation_tokens_);
  for (size_t i = 0; i < num_finish_reasons; ++i) r.finished[i] = count(*success_[i]);
  return r;
}

void engine_metrics::on_stats(const scheduler_stats& stats) {
  num_running_.Set(stats.num_running);
  num_waiting_.Set(stats.num_waiting);
  num_swapped_.Set(stats.num_swapped);
  kv_usage_.Set(stats.device.utilization());
  cpu_kv_usage_.Set(stats.cpu.utilization());
  device_.num_free->Set(stats.device.num_free);
  device_.num_cached->Set(stats.device.num_cached);
  cpu_.num_free->Set(stats.cpu.num_free);
  cpu_.num_cached->Set(stats.cpu.num_cached);
  advance(num_preemptions_, last_.num_preemptions, stats.num_preemptions);
  advance(prefix_queries_, last_.prefix_cache_queries, stats.prefix_cache_queries);
  advance(prefix_hits_, last_.prefix_cache_hits, stats.prefix_cache_hits);
  advance(tier_queries_, last_.tier_cache_queries, stats.tier_cache_queries);
  advance(tier_hits_, last_.tier_cache_hits, stats.tier_cache_hits);
  tier_usage_.Set(stats.tier.num_slots > 0 ? double(stats.tier.num_used) / stats.tier.num_slots
                                           : 0.0);
  advance(tier_stored_, last_.tier.num_stored, stats.tier.num_stored);
  advance(tier_loaded_, last_.tier.num_loaded, stats.tier.num_loaded);
  advance(tier_evicted_, last_.tier.num_evicted, stats.tier.num_evicted);
  advance(tier_failed_, last_.tier.num_failed, stats.tier.num_failed);
  const speculation_stats& spec = stats.speculation;
  advance(spec_drafts_, last_.speculation.num_drafts, spec.num_drafts);
  advance(spec_draft_tokens_, last_.speculation.num_draft_tokens, spec.num_draft_tokens);
  advance(spec_accepted_tokens_, last_.speculation.num_accepted_tokens, spec.num_accepted_tokens);
  // Positions are bounded by num_speculative_tokens (at most 32).
  for (size_t i = 0; i < spec.accepted_per_position.size(); ++i) {
    if (i == spec_accepted_per_position_.size())
      spec_accepted_per_position_.push_back(
          &add(spec_accepted_per_position_family_, removers_,
               with(base_labels_, "position", std::to_string(i))));
    const auto& before = last_.speculation.accepted_per_position;
    advance(*spec_accepted_per_position_[i], i < before.size() ? before[i] : 0,
            spec.accepted_per_position[i]);
  }
  last_ = stats;
}

void engine_metrics::on_replica_down() {
  on_stats(scheduler_stats{});
  timeline_ = request_timeline{};
}

stats_snapshot engine_metrics::snapshot(double now) const {
  stats_snapshot s;
  s.now = now;
  s.num_prompt_tokens = num_prompt_tokens_;
  s.num_generation_tokens = num_generation_tokens_;
  s.num_running = last_.num_running;
  s.num_swapped = last_.num_swapped;
  s.num_waiting = last_.num_waiting;
  s.gpu_kv_cache_usage = last_.device.utilization();
  s.cpu_kv_cache_usage = last_.cpu.utilization();
  s.num_drafts = last_.speculation.num_drafts;
  s.num_draft_tokens = last_.speculation.num_draft_tokens;
  s.num_accepted_tokens = last_.speculation.num_accepted_tokens;
  return s;
}

}  // namespace actorllm
