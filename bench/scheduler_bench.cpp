// Scheduler overhead: the cost of one schedule() + update() with N requests decoding
// (1, 64, 256, 1024), in microseconds, next to the budget it must stay far below (a model
// step takes milliseconds; the target is under 100 us at 256). A second set of rows adds
// prefill chunks and arrivals (a mixed step). Prints one JSON line, then a table.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/scheduler/scheduler.hpp"
#include "bench/bench_util.hpp"

namespace {

using namespace actorllm;

constexpr int32_t prompt_len = 128;
constexpr int32_t num_warmup_steps = 100;  // covers the prefill of 1024 prompts at 2048 a step
constexpr int32_t num_timed_steps = 1000;

/// What workers would return: one token per sampling sequence (built outside the timing).
step_result sample(const step_plan& plan, int32_t token) {
  step_result result;
  result.step = plan.step;
  result.seqs.reserve(plan.seqs.size());
  for (const scheduled_sequence& s : plan.seqs) {
    if (s.num_samples == 0) continue;
    sequence_sample sample;
    sample.seq = s.seq;
    sample.token_ids.assign(s.num_samples, token);
    result.seqs.push_back(std::move(sample));
  }
  return result;
}

struct timing {
  double schedule_us = 0;
  double update_us = 0;
  double p99_us = 0;
  double tokens_per_step = 0;
};

/// N requests decode for num_timed_steps steps; `churn` replaces finished requests with new
/// ones so that prefill chunks and admissions are part of the timed steps.
timing run(int32_t num_requests, bool churn) {
  scheduler_options o;
  o.block_size = 16;
  int32_t max_len = prompt_len + num_warmup_steps + num_timed_steps + 16;
  o.max_model_len = max_len + 1;
  o.num_device_blocks = (num_requests + 8) * ((max_len + 15) / 16) + 64;
  o.scheduler.max_num_seqs = num_requests;
  o.scheduler.max_num_batched_tokens = std::max(2048, num_requests);
  o.scheduler.max_waiting_requests = 1 << 20;
  o.eos_token_ids = {2};
  scheduler s(o);

  int64_t next_id = 0;
  auto add = [&](int32_t max_tokens) {
    std::vector<int32_t> prompt(prompt_len);
    for (int32_t i = 0; i < prompt_len; ++i) prompt[i] = int32_t((next_id * 131 + i) % 30000) + 3;
    sampling_params p;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    s.add_request("bench-request-" + std::to_string(next_id++), std::move(prompt), p);
  };
  for (int32_t i = 0; i < num_requests; ++i) {
    // With churn a request lives 32..95 steps, so a few finish and arrive every step.
    add(churn ? 32 + int32_t(i * 37 % 64) : num_warmup_steps + num_timed_steps + 8);
  }
  auto replace_finished = [&](const std::vector<request_output>& outputs) {
    if (!churn) return;
    for (const request_output& out : outputs) {
      if (out.finish != finish_reason::none) add(32 + int32_t(next_id * 37 % 64));
    }
  };
  for (int32_t i = 0; i < num_warmup_steps; ++i)
    replace_finished(s.update(sample(s.schedule(), 7)));

  std::vector<double> step_us;
  double total_schedule = 0, total_update = 0, total_tokens = 0;
  for (int32_t i = 0; i < num_timed_steps; ++i) {
    double t0 = bench::now_seconds();
    step_plan plan = s.schedule();
    double t1 = bench::now_seconds();
    step_result result = sample(plan, 7);
    double t2 = bench::now_seconds();
    std::vector<request_output> outputs = s.update(result);
    double t3 = bench::now_seconds();
    replace_finished(outputs);
    total_schedule += t1 - t0;
    total_update += t3 - t2;
    total_tokens += plan.num_scheduled_tokens;
    step_us.push_back(((t1 - t0) + (t3 - t2)) * 1e6);
  }
  std::sort(step_us.begin(), step_us.end());
  timing t;
  t.schedule_us = total_schedule / num_timed_steps * 1e6;
  t.update_us = total_update / num_timed_steps * 1e6;
  t.p99_us = step_us[size_t(0.99 * (step_us.size() - 1))];
  t.tokens_per_step = total_tokens / num_timed_steps;
  return t;
}

}  // namespace

int main() {
  nlohmann::json rows = nlohmann::json::array();
  for (bool churn : {false, true}) {
    for (int32_t n : {1, 64, 256, 1024}) {
      timing t = run(n, churn);
      double step = t.schedule_us + t.update_us;
      rows.push_back({{"workload", churn ? "mixed" : "decode"},
                      {"requests", n},
                      {"tokens_per_step", t.tokens_per_step},
                      {"schedule_us", t.schedule_us},
                      {"update_us", t.update_us},
                      {"step_us", step},
                      {"p99_step_us", t.p99_us},
                      {"us_per_request", step / n}});
    }
  }
  bench::print_report("scheduler: one schedule() + update() (target: step_us < 100 at 256)",
                      {"workload", "requests", "tokens_per_step", "schedule_us", "update_us",
                       "step_us", "p99_step_us", "us_per_request"},
                      rows);
  return 0;
}
