// The scheduler's bookkeeping outside schedule(): admission, update(), abort(), stats and
// the invariant check.
#include <algorithm>
#include <unordered_set>

#include "actors/scheduler/scheduler.hpp"

namespace actorllm {

std::optional<admission_error> scheduler::add_request(std::string request_id,
                                                      std::vector<int32_t> prompt_token_ids,
                                                      const sampling_params& params,
                                                      std::vector<prompt_image> images) {
  using code = admission_error::code;
  auto error = [](code kind, std::string message) {
    return std::optional<admission_error>(admission_error{kind, std::move(message)});
  };
  int32_t num_prompt = static_cast<int32_t>(prompt_token_ids.size());
  if (requests_.count(request_id)) {
    return error(code::duplicate_request_id, "request id '" + request_id + "' is already in use");
  }
  const bool pooling = params.pooling != pooling_type::none;
  if (pooling && params.n != 1) {
    return error(code::invalid_params,
                 "an embedding request has one choice (n = 1), got " + std::to_string(params.n));
  }
  if (params.n < 1 || params.n > options_.scheduler.max_num_seqs) {
    return error(code::invalid_params, "n must be between 1 and max_num_seqs (" +
                                           std::to_string(options_.scheduler.max_num_seqs) +
                                           "), got " + std::to_string(params.n));
  }
  if (params.max_tokens == 0 || params.max_tokens < -1) {
    return error(code::invalid_params,
                 "max_tokens must be at least 1 (or -1), got " + std::to_string(params.max_tokens));
  }
  if (params.priority != 0 && options_.scheduler.policy != scheduling_policy::priority) {
    return error(code::invalid_params,
                 "priority " + std::to_string(params.priority) +
                     " is set, but requests run first come, first served; start the server "
                     "with --scheduling-policy priority");
  }
  if (num_prompt == 0) return error(code::empty_prompt, "the prompt is empty");
  for (size_t i = 0; i < images.size(); ++i) {
    const prompt_image& image = images[i];
    if (options_.whole_images && image.num_tokens > options_.scheduler.max_num_batched_tokens)
      return error(code::invalid_params,
                   "image " + std::to_string(i) + " fills " + std::to_string(image.num_tokens) +
                       " positions, more than one step computes (--max-num-batched-tokens " +
                       std::to_string(options_.scheduler.max_num_batched_tokens) + ")");
    const int32_t start = i == 0 ? 0 : images[i - 1].end();
    if (image.num_tokens <= 0 || image.offset < start || image.end() > num_prompt ||
        image.pixels.size() != static_cast<size_t>(image.channels) * image.height * image.width)
      return error(code::invalid_params,
                   "image " + std::to_string(i) + " does not fit the prompt's positions in order");
  }
  if (num_prompt > options_.max_model_len || (num_prompt == options_.max_model_len && !pooling)) {
    return error(code::prompt_too_long, "the prompt has " + std::to_string(num_prompt) +
                                            " tokens; this model's maximum context length is " +
                                            std::to_string(options_.max_model_len) +
                                            ", which leaves no room to generate");
  }
  int32_t num_blocks = (num_prompt + options_.block_size - 1) / options_.block_size;
  if (num_blocks > options_.num_device_blocks) {
    return error(code::exceeds_kv_cache,
                 "the prompt has " + std::to_string(num_prompt) + " tokens and needs " +
                     std::to_string(num_blocks) + " KV cache blocks, but the cache holds only " +
                     std::to_string(options_.num_device_blocks) + " blocks of " +
                     std::to_string(options_.block_size) + " tokens");
  }
  if (static_cast<int32_t>(waiting_.size()) >= options_.scheduler.max_waiting_requests) {
    return error(code::queue_full, "too many requests are waiting (" +
                                       std::to_string(waiting_.size()) + "); try again later");
  }

  auto r = std::make_unique<request>();
  r->request_id = std::move(request_id);
  r->params = params;
  r->num_prompt_tokens = num_prompt;
  r->images = std::move(images);
  int32_t room = options_.max_model_len - num_prompt;
  r->max_output_tokens = params.max_tokens < 0 ? room : std::min(params.max_tokens, room);
  r->arrival = num_arrivals_++;
  sequence s;
  s.id = next_seq_id_++;
  s.token_ids = std::move(prompt_token_ids);
  r->seqs.push_back(std::move(s));
  seqs_[r->seqs[0].id] = {r.get(), 0};
  r->state = request_state::waiting;
  insert_sorted(waiting_, *r);
  requests_.emplace(r->request_id, std::move(r));
  return std::nullopt;
}

bool scheduler::has_work() const {
  return !waiting_.empty() || !running_.empty() || !swapped_.empty() ||
         !finished_since_plan_.empty() || !pending_outputs_.empty();
}

std::vector<request_output> scheduler::update(const step_result& result) {
  ACTORLLM_CHECK(!in_flight_.empty() && in_flight_.front().step == result.step);
  const std::vector<seq_id> sampling = std::move(in_flight_.front().sampling);
  in_flight_.pop_front();
  std::vector<request_output> outputs = std::move(pending_outputs_);
  pending_outputs_.clear();
  // The workers computed those blocks again; the tier forgets the slots that held them.
  for (const block_copy& failed : result.failed_loads) blocks_.tier_load_failed(failed.src);
  outputs.reserve(outputs.size() + result.seqs.size());
  // Samples come in plan order, as `sampling` lists them: every sequence that reached its last
  // token was sampled, unless it ended (aborted, or stopped by the step before) meanwhile.
  size_t next = 0;
  for (const sequence_sample& sample : result.seqs) {
    if (!sample.prompt_logprobs.empty()) keep_prompt_logprobs(sample);
    // A chunk that does not end the prompt sends a sample only for its prompt logprobs.
    if (sample.token_ids.empty() && sample.embedding.empty() &&
        sample.beam_candidates.top_ids.empty())
      continue;
    while (next < sampling.size() && sampling[next] != sample.seq)
      ACTORLLM_CHECK(seqs_.count(sampling[next++]) == 0);
    ACTORLLM_CHECK(next < sampling.size());
    ++next;
    auto it = seqs_.find(sample.seq);
    if (it == seqs_.end()) continue;  // ended while the step ran
    auto [r, seq_index] = it->second;
    apply_samples(*r, seq_index, sample, outputs);
  }
  for (; next < sampling.size(); ++next) ACTORLLM_CHECK(seqs_.count(sampling[next]) == 0);
  bool any_finished = false;
  for (request* r : running_) any_finished = any_finished || r->state == request_state::finished;
  if (any_finished) {
    std::vector<request*> done;
    auto keep = std::remove_if(running_.begin(), running_.end(), [&done](request* r) {
      if (r->state != request_state::finished) return false;
      done.push_back(r);
      return true;
    });
    running_.erase(keep, running_.end());
    for (request* r : done) forget(*r);
  }
  return outputs;
}

void scheduler::keep_prompt_logprobs(const sequence_sample& sample) {
  auto it = seqs_.find(sample.seq);
  if (it == seqs_.end()) return;  // ended while the step ran
  request& r = *it->second.first;
  if (r.sampled) return;  // a recompute's: sent with the first token already
  // Entry i scores prompt token i + 1. A chunk recomputed after a preemption replaces what
  // its first pass gathered.
  const auto from = static_cast<size_t>(sample.prompt_logprobs_from - 1);
  ACTORLLM_CHECK(sample.prompt_logprobs_from >= 1 && from <= r.prompt_logprobs.size() &&
                 from + sample.prompt_logprobs.size() < static_cast<size_t>(r.num_prompt_tokens));
  r.prompt_logprobs.resize(from);
  r.prompt_logprobs.insert(r.prompt_logprobs.end(), sample.prompt_logprobs.begin(),
                           sample.prompt_logprobs.end());
}

void scheduler::apply_samples(request& r, int32_t seq_index, const sequence_sample& sample,
                              std::vector<request_output>& outputs) {
  sequence& first = r.seqs[seq_index];
  int32_t num_samples = static_cast<int32_t>(sample.token_ids.size());
  ACTORLLM_CHECK(r.state == request_state::running);
  if (r.params.pooling != pooling_type::none) {
    // An embedding ends with its prompt: the vector, no token.
    ACTORLLM_CHECK(sample.token_ids.empty() && first.num_pending_samples == 1);
    first.num_pending_samples = 0;
    r.sampled = true;
    finish_seq(r, first, finish_reason::stop);
    request_output out = output_of(r, first);
    out.embedding = sample.embedding;
    outputs.push_back(std::move(out));
    r.state = request_state::finished;
    return;
  }
  if (keep_beam_candidates(r, first, sample)) {
    const bool round_done = std::all_of(r.seqs.begin(), r.seqs.end(), [](const sequence& s) {
      return s.finished() || s.has_beam_candidates;
    });
    if (round_done) advance_beams(r, outputs);
    return;
  }
  if (first.num_drafts_in_flight > 0) {
    apply_verified(r, first, sample, outputs);
    keep_proposals(r, first, sample);
    return;
  }
  ACTORLLM_CHECK(num_samples >= 1 && num_samples <= first.num_pending_samples);
  ACTORLLM_CHECK(sample.logprobs.empty() || sample.logprobs.size() == sample.token_ids.size());
  first.num_pending_samples -= num_samples;
  if (num_samples == 1) {
    // The workers keep a lone sample themselves (sequence_mirror::append_samples): no plan
    // needs to send it back, and a step planned ahead could not have.
    ++first.num_tokens_sent;
    apply_token(r, first, sample.token_ids[0],
                sample.logprobs.empty() ? nullptr : &sample.logprobs[0], outputs);
    keep_proposals(r, first, sample);
    return;
  }
  ACTORLLM_CHECK(first.num_pending_samples == 0);
  std::vector<int32_t> targets{seq_index};
  {
    // The first sampling of an n > 1 request: the sequence forks into n that share its blocks.
    ACTORLLM_CHECK(!r.sampled && r.seqs.size() == 1 && num_samples == r.params.n);
    for (int32_t j = 1; j < num_samples; ++j) {
      sequence child;
      child.id = next_seq_id_++;
      child.index = j;
      child.token_ids = r.seqs[0].token_ids;
      child.num_computed_tokens = r.seqs[0].num_computed_tokens;
      blocks_.fork(r.seqs[0].id, child.id);
      r.seqs.push_back(std::move(child));
      seqs_[r.seqs.back().id] = {&r, static_cast<int32_t>(r.seqs.size()) - 1};
      targets.push_back(static_cast<int32_t>(r.seqs.size()) - 1);
    }
  }
  for (int32_t j = 0; j < num_samples; ++j) {
    apply_token(r, r.seqs[targets[j]], sample.token_ids[j],
                sample.logprobs.empty() ? nullptr : &sample.logprobs[j], outputs);
  }
}

void scheduler::apply_verified(request& r, sequence& s, const sequence_sample& sample,
                               std::vector<request_output>& outputs) {
  const int32_t num_drafts = s.num_drafts_in_flight;
  const auto num_tokens = static_cast<int32_t>(sample.token_ids.size());
  ACTORLLM_CHECK(num_tokens >= 1 && num_tokens <= num_drafts + 1 && s.num_pending_samples == 1);
  const int32_t num_accepted = num_tokens - 1;
  s.num_drafts_in_flight = 0;
  s.num_pending_samples = 0;
  ++speculation_.num_drafts;
  speculation_.num_draft_tokens += num_drafts;
  speculation_.num_accepted_tokens += num_accepted;
  auto& per_position = speculation_.accepted_per_position;
  if (static_cast<int32_t>(per_position.size()) < num_drafts) per_position.resize(num_drafts, 0);
  for (int32_t i = 0; i < num_accepted; ++i) ++per_position[i];
  s.pacer.record(num_drafts, num_accepted, options_.speculative.min_acceptance_rate);

  // The rejected drafts' slots go back (whole blocks to the pool): the sequence holds the KV
  // of its tokens but the last, as after any decode step. The workers keep every token.
  s.num_computed_tokens -= num_drafts - num_accepted;
  // The workers' copy of a shortened table is sent whole next time (its tail may come back as
  // other blocks).
  if (blocks_.trim_slots(s.id, s.num_computed_tokens) > 0) s.table_replaced = true;
  s.num_tokens_sent += num_tokens;
  int32_t num_kept = 0;
  while (num_kept < num_tokens && !s.finished()) {
    s.token_ids.push_back(sample.token_ids[num_kept++]);
    if (check_stop(r, s)) finish_seq(r, s, s.finish);  // the tokens after a stop are dropped
  }
  request_output out = output_of(r, s);
  out.token_ids.assign(sample.token_ids.begin(), sample.token_ids.begin() + num_kept);
  if (!sample.logprobs.empty())
    out.logprobs.assign(sample.logprobs.begin(), sample.logprobs.begin() + num_kept);
  outputs.push_back(std::move(out));
  if (s.finished() && r.num_live_seqs() == 0) r.state = request_state::finished;
}

void scheduler::keep_proposals(const request& r, sequence& s, const sequence_sample& sample) {
  if (s.finished() || r.state != request_state::running) return;
  // At most what was asked: a worker's list never grows a step past its budget.
  const auto k = static_cast<size_t>(std::max(0, options_.speculative.num_speculative_tokens));
  s.draft_token_ids.assign(sample.draft_token_ids.begin(),
                           sample.draft_token_ids.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                k, sample.draft_token_ids.size())));
}

void scheduler::apply_token(request& r, sequence& s, int32_t token, const token_logprob* logprob,
                            std::vector<request_output>& outputs) {
  r.sampled = true;
  s.token_ids.push_back(token);
  if (check_stop(r, s)) finish_seq(r, s, s.finish);
  outputs.push_back(output_of(r, s));
  if (r.params.prompt_logprobs >= 0 && s.num_tokens() == r.num_prompt_tokens + 1) {
    ACTORLLM_CHECK(r.prompt_logprobs.size() + 1 == static_cast<size_t>(r.num_prompt_tokens));
    outputs.back().prompt_logprobs = r.prompt_logprobs;
  }
  outputs.back().token_ids.push_back(token);
  if (logprob) outputs.back().logprobs.push_back(*logprob);
  if (s.finished() && r.num_live_seqs() == 0) r.state = request_state::finished;
}

bool scheduler::check_stop(const request& r, sequence& s) const {
  int32_t token = s.token_ids.back();
  int32_t num_output = s.num_tokens() - r.num_prompt_tokens;
  // Stop tokens among the first min_tokens outputs do not count (the sampler masks them).
  bool may_stop = num_output - 1 >= r.params.min_tokens;
  const std::vector<int32_t>& eos = options_.eos_token_ids;
  const std::vector<int32_t>& stop_ids = r.params.stop_token_ids;
  if (may_stop && !r.params.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) {
    s.finish = finish_reason::stop;
  } else if (may_stop && std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
    s.finish = finish_reason::stop;
    s.stop_token = token;
  } else if (num_output >= r.max_output_tokens || s.num_tokens() >= options_.max_model_len) {
    s.finish = finish_reason::length;
  }
  return s.finished();
}

void scheduler::finish_seq(request& r, sequence& s, finish_reason reason) {
  s.finish = reason;
  s.draft_token_ids.clear();
  s.num_drafts_in_flight = 0;
  blocks_.free(s.id);
  seqs_.erase(s.id);
  s.num_pending_samples = 0;
  if (s.known_to_workers) finished_since_plan_.push_back(s.id);
  if (r.state == request_state::running) --num_running_seqs_;
}

request_output scheduler::output_of(const request& r, const sequence& s) const {
  request_output out;
  out.request_id = r.request_id;
  out.index = s.index;
  out.finish = s.finish;
  out.stop_token = s.stop_token;
  out.num_prompt_tokens = r.num_prompt_tokens;
  out.num_generated_tokens = s.num_tokens() - r.num_prompt_tokens;
  out.num_cached_tokens = r.num_cached_tokens;
  return out;
}

void scheduler::add_unforked_outputs(const request& r, std::vector<request_output>& outputs) const {
  // Samples 1..n-1 do not exist before the first sampling, but each choice is owed an end.
  if (r.sampled) return;
  for (int32_t index = 1; index < r.params.n; ++index) {
    request_output out = output_of(r, r.seqs[0]);
    out.index = index;
    outputs.push_back(std::move(out));
  }
}

void scheduler::forget(request& r) {
  for (const sequence& s : r.seqs) ACTORLLM_CHECK(s.finished());
  requests_.erase(r.request_id);  // destroys r
}

std::vector<request_output> scheduler::abort(const std::string& request_id, finish_reason reason) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return {};
  request& r = *it->second;
  std::vector<request_output> outputs;
  leave_queue(r);
  for (sequence& s : r.seqs) {
    if (s.finished()) continue;
    finish_seq(r, s, reason);
    if (!r.params.beam.enabled) outputs.push_back(output_of(r, s));
  }
  if (r.params.beam.enabled) {
    // The beams are not the answer's choices: each of its n choices ends, empty.
    for (int32_t index = 0; index < std::max(1, r.params.n); ++index) {
      request_output out = output_of(r, r.seqs[0]);
      out.index = index;
      out.finish = reason;
      out.num_generated_tokens = 0;
      outputs.push_back(std::move(out));
    }
  } else {
    add_unforked_outputs(r, outputs);
  }
  // Other outputs of this request waiting for the next update() are moot now.
  std::erase_if(pending_outputs_,
                [&](const request_output& o) { return o.request_id == request_id; });
  forget(r);
  return outputs;
}

std::vector<scheduler_event> scheduler::take_events() {
  std::vector<scheduler_event> events = std::move(events_);
  events_.clear();
  return events;
}

std::string to_string(const scheduler_event& event) {
  std::string line = "step " + std::to_string(event.step) + ": request " + event.request_id;
  switch (event.what) {
    case scheduler_event::kind::preempted_by_recompute:
      line += " preempted (recompute";
      line += event.swap_space_full ? ": CPU swap space full)" : ")";
      break;
    case scheduler_event::kind::preempted_by_swap:
      line += " preempted (swapped to CPU)";
      break;
    case scheduler_event::kind::out_of_kv_cache:
      line += " finished: it alone outgrows the KV cache";
      break;
  }
  return line;
}

scheduler_stats scheduler::stats() const {
  block_manager_stats b = blocks_.stats();
  scheduler_stats s;
  s.num_waiting = static_cast<int32_t>(waiting_.size());
  s.num_running = static_cast<int32_t>(running_.size());
  s.num_swapped = static_cast<int32_t>(swapped_.size());
  s.num_preemptions = num_preemptions_;
  s.num_scheduled_tokens = last_num_scheduled_tokens_;
  s.num_scheduled_seqs = last_num_scheduled_seqs_;
  s.prefix_cache_queries = b.prefix_cache_queries;
  s.prefix_cache_hits = b.prefix_cache_hits;
  s.tier_cache_queries = b.tier_cache_queries;
  s.tier_cache_hits = b.tier_cache_hits;
  s.tier = b.tier;
  s.device = b.device;
  s.cpu = b.cpu;
  s.speculation = speculation_;
  return s;
}

}  // namespace actorllm
