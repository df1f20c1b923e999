#include "monitoring/request_timeline.hpp"

#include <algorithm>
#include <chrono>

namespace actorllm {

double now_seconds() {
  using seconds = std::chrono::duration<double>;
  return std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void request_timeline::on_added(const std::string& request_id, int32_t num_choices, double now) {
  timing t;
  t.arrived_at = now;
  t.num_open_choices = std::max(num_choices, 1);
  t.choices.resize(static_cast<std::size_t>(t.num_open_choices));
  requests_[request_id] = std::move(t);
}

std::vector<double> request_timeline::on_scheduled(const step_plan& plan, double now) {
  std::vector<double> queue_times;
  for (const new_sequence& s : plan.new_seqs) {
    auto it = requests_.find(s.request_id);
    // The n sequences of one request arrive together; the request is queued once.
    if (it == requests_.end() || it->second.scheduled) continue;
    it->second.scheduled = true;
    it->second.scheduled_at = now;
    queue_times.push_back(now - it->second.arrived_at);
  }
  return queue_times;
}

request_timeline::timing& request_timeline::find_or_add(const std::string& request_id, double now) {
  auto it = requests_.find(request_id);
  if (it != requests_.end()) return it->second;
  on_added(request_id, 1, now);
  return requests_[request_id];
}

timeline_update request_timeline::on_outputs(const std::vector<request_output>& outputs,
                                             double now) {
  timeline_update update;
  for (const request_output& output : outputs) {
    timing& t = find_or_add(output.request_id, now);
    apply(output, t, now, update);
    if (t.num_open_choices == 0) requests_.erase(output.request_id);
  }
  return update;
}

void request_timeline::apply(const request_output& output, timing& t, double now,
                             timeline_update& update) {
  auto index = static_cast<std::size_t>(std::max(output.index, 0));
  if (index >= t.choices.size()) {
    // A choice beyond the announced n: track it rather than lose its tokens.
    t.choices.resize(index + 1);
    ++t.num_open_choices;
  }
  choice& c = t.choices[index];
  if (c.finished) return;

  // Counts are cumulative in the outputs: add only what is new, so that a repeated or
  // recomputed output never counts a token twice.
  int32_t num_new = std::max(output.num_generated_tokens - c.num_generated, 0);
  c.num_generated = std::max(c.num_generated, output.num_generated_tokens);
  update.num_generation_tokens += num_new;
  if (num_new > 0) {
    if (!t.first_token_seen) {
      t.first_token_seen = true;
      t.first_token_at = now;
      update.num_prompt_tokens += output.num_prompt_tokens;
      update.time_to_first_token.push_back(now - t.arrived_at);
    }
    if (c.last_token_at) update.inter_token_latency.push_back(now - *c.last_token_at);
    c.last_token_at = now;
  }

  if (output.finish == finish_reason::none) return;
  c.finished = true;
  if (--t.num_open_choices > 0) return;
  finished_request done;
  done.reason = output.finish;
  done.num_prompt_tokens = output.num_prompt_tokens;
  for (const choice& each : t.choices) done.num_generation_tokens += each.num_generated;
  done.e2e_seconds = now - t.arrived_at;
  if (t.scheduled) {
    done.inference_seconds = now - t.scheduled_at;
    if (t.first_token_seen) {
      done.prefill_seconds = t.first_token_at - t.scheduled_at;
      done.decode_seconds = now - t.first_token_at;
    }
  }
  update.finished.push_back(done);
}

}  // namespace actorllm
