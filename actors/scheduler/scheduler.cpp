#include "actors/scheduler/scheduler.hpp"

#include <algorithm>

namespace actorllm {

block_manager_config block_config_of(const scheduler_options& o) {
  return {o.block_size,     o.num_device_blocks, o.num_cpu_blocks, o.enable_prefix_caching,
          o.sliding_window, o.num_tier_blocks};
}

scheduler::scheduler(const scheduler_options& options)
    : options_(options),
      policy_(make_queue_policy(options.scheduler.policy)),
      blocks_(block_config_of(options)) {
  ACTORLLM_CHECK(options.scheduler.max_num_batched_tokens > 0);
  ACTORLLM_CHECK(options.scheduler.max_num_seqs > 0);
  ACTORLLM_CHECK(options.max_model_len > 0);
}

scheduler::~scheduler() = default;

step_plan scheduler::schedule() {
  ACTORLLM_CHECK(in_flight_.empty());
  needs_plain_schedule_ = false;
  return plan_step();
}

std::optional<step_plan> scheduler::schedule_ahead() {
  ACTORLLM_CHECK(in_flight_.size() == 1);
  if (needs_plain_schedule_ || in_flight_.back().speculative || !has_work()) return std::nullopt;
  planning_ahead_ = true;
  step_plan plan = plan_step();
  planning_ahead_ = false;
  if (plan.needs_workers()) return plan;
  // Undo the step's registration: nothing was committed, the plan is dropped.
  in_flight_.pop_back();
  --num_steps_;
  return std::nullopt;
}

bool scheduler::ends_at_pending_sample(const request& r, const sequence& s) const {
  if (r.params.pooling != pooling_type::none) return true;  // an embedding ends at its prompt
  const int32_t num_tokens = s.num_tokens() + s.num_pending_samples;
  return num_tokens - r.num_prompt_tokens >= r.max_output_tokens ||
         num_tokens >= options_.max_model_len;
}

step_plan scheduler::plan_step() {
  step_plan plan;
  plan.step = ++num_steps_;
  in_flight_.push_back({plan.step, {}});
  plan.seqs.reserve(std::min<size_t>(num_running_seqs_ + 16, options_.scheduler.max_num_seqs));
  budget b{options_.scheduler.max_num_batched_tokens, options_.scheduler.max_num_seqs};

  // NOTE: running first, then swapped, then waiting (vLLM's order). A step that had to preempt
  // admits nobody: the space it just freed is what the running requests are short of.
  bool preempted = schedule_running(b, plan);
  if (!preempted) schedule_swapped(b, plan);
  // Swapped requests go before new ones so that they cannot starve.
  if (!preempted && swapped_.empty()) schedule_waiting(b, plan);

  plan.finished_seq_ids = std::move(finished_since_plan_);
  finished_since_plan_.clear();
  tier_moves moves = blocks_.take_tier_moves();
  plan.blocks_to_store = std::move(moves.stores);
  plan.blocks_to_load = std::move(moves.loads);
  last_num_scheduled_tokens_ = plan.num_scheduled_tokens;
  last_num_scheduled_seqs_ = static_cast<int32_t>(plan.seqs.size());
  return plan;
}

bool scheduler::build_fitting_chunks(request& r, const budget& b, int32_t num_reserved) {
  build_chunks(r, b);
  if (blocks_.can_grow(slots_, num_reserved)) return true;
  const bool had_drafts =
      std::any_of(chunks_.begin(), chunks_.end(), [](const chunk& c) { return c.num_drafts > 0; });
  if (!had_drafts) return false;
  build_chunks(r, b, /*with_drafts=*/false);
  return blocks_.can_grow(slots_, num_reserved);
}

void scheduler::build_chunks(request& r, const budget& b, bool with_drafts) {
  chunks_.clear();
  slots_.clear();
  int32_t num_tokens_left = b.num_tokens;
  int32_t num_seqs_left = b.num_seqs;
  bool has_new_seq = false;
  for (int32_t i = 0; i < static_cast<int32_t>(r.seqs.size()); ++i) {
    if (num_tokens_left <= 0 || num_seqs_left <= 0) break;
    sequence& s = r.seqs[i];
    if (s.finished()) continue;
    if (s.num_pending_samples > 0) {
      // Planning ahead: the token in flight is computed next, unless the sampling forks the
      // request (its n sequences do not exist yet) or is certain to end the sequence.
      ACTORLLM_CHECK(planning_ahead_);
      if (!r.sampled && r.params.n > 1) return;
      if (r.params.beam.enabled) return;  // its next tokens are chosen from every beam's
      ACTORLLM_CHECK(s.num_pending_samples == 1);
      if (ends_at_pending_sample(r, s)) continue;
    }
    const int32_t end = s.num_tokens() + s.num_pending_samples;
    if (s.num_computed_tokens >= end) continue;
    int32_t start = s.num_computed_tokens;
    // A sequence's blocks hold exactly its computed tokens, so none computed means no blocks.
    bool is_new = s.num_computed_tokens == 0;
    if (is_new) {
      // NOTE: one sequence without blocks per request and step, allocated first: then
      // allocate() finds exactly the cached prefix counted here (nothing is evicted between),
      // and a sibling recomputing the same prompt hits this one's blocks next step.
      if (has_new_seq) continue;
      has_new_seq = true;
      start = r.reads_prefix_cache() ? blocks_.num_cached_tokens(s.token_ids, cache_salt(r)) : 0;
    }
    int32_t num_scheduled = std::min(end - start, num_tokens_left);
    if (options_.whole_images) {
      num_scheduled = before_split_image(r, start, num_scheduled);
      if (num_scheduled == 0) continue;  // the image waits for a step with room for all of it
    }
    // Drafts follow a decoding sequence's one new token (a sequence without blocks allocates
    // exactly its tokens' slots first).
    const int32_t num_drafts = with_drafts && end - start == 1 && !is_new
                                   ? num_drafts_to_verify(r, s, num_tokens_left - num_scheduled)
                                   : 0;
    chunk c{i, start + num_scheduled + num_drafts, num_scheduled, num_drafts};
    slot_request slot{s.id, s.token_ids, c.num_tokens, cache_salt(r), r.reads_prefix_cache()};
    if (is_new) {
      chunks_.insert(chunks_.begin(), c);
      slots_.insert(slots_.begin(), slot);
    } else {
      chunks_.push_back(c);
      slots_.push_back(slot);
    }
    num_tokens_left -= num_scheduled + num_drafts;
    --num_seqs_left;
  }
}

int32_t scheduler::before_split_image(const request& r, int32_t start, int32_t num_tokens) {
  const int32_t end = start + num_tokens;
  for (const prompt_image& image : r.images) {
    if (end <= image.offset || end >= image.end()) continue;  // not cut by this chunk's end
    return image.offset > start ? image.offset - start : 0;
  }
  return num_tokens;
}

int32_t scheduler::num_drafts_to_verify(const request& r, const sequence& s,
                                        int32_t num_tokens_left) const {
  if (s.draft_token_ids.empty() || planning_ahead_ || !r.sampled) return 0;
  // Every token the step may emit (the drafts and one more) must fit the request's limits.
  const int32_t num_output = s.num_tokens() - r.num_prompt_tokens;
  const int32_t room =
      std::min(r.max_output_tokens - num_output, options_.max_model_len - s.num_tokens()) - 1;
  return std::max(
      0, std::min({static_cast<int32_t>(s.draft_token_ids.size()), num_tokens_left, room}));
}

int32_t scheduler::num_lookahead(const request& r, sequence& s) const {
  const speculative_config& spec = options_.speculative;
  if (!spec.enabled() || planning_ahead_ || r.params.pooling != pooling_type::none ||
      r.params.beam.enabled)
    return 0;
  // Structured output masks each verified position, except where the constraint starts after
  // the reasoning: a draft could end the reasoning, and the masks after it are not known yet.
  if (r.params.structured.active() && r.params.structured.after_reasoning) return 0;
  if (spec.disable_by_batch_size > 0 && num_running_seqs_ >= spec.disable_by_batch_size) return 0;
  // Proposals past the request's end would never be verified.
  const int32_t num_output = s.num_tokens() + 1 - r.num_prompt_tokens;
  if (num_output + 1 >= r.max_output_tokens || s.num_tokens() + 2 >= options_.max_model_len)
    return 0;
  if (!s.pacer.speculate_now()) return 0;
  return spec.num_speculative_tokens;
}

void scheduler::commit(request& r, budget& b, step_plan& plan) {
  for (const chunk& c : chunks_) {
    sequence& s = r.seqs[c.seq_index];
    if (s.num_computed_tokens == 0) {
      int32_t num_hit =
          blocks_.allocate(s.id, s.token_ids, c.num_tokens, cache_salt(r), r.reads_prefix_cache());
      ACTORLLM_CHECK(num_hit == c.num_tokens - c.num_scheduled);
      s.num_computed_tokens = num_hit;
      s.table_replaced = true;
      if (!r.sampled) r.num_cached_tokens = num_hit;
    } else if (blocks_.append_slots(s.id, s.token_ids, c.num_tokens, plan.blocks_to_copy) > 0) {
      s.table_replaced = true;
    }
    ACTORLLM_CHECK(s.num_computed_tokens + c.num_scheduled + c.num_drafts == c.num_tokens);

    scheduled_sequence out;
    out.seq = s.id;
    out.num_computed_tokens = s.num_computed_tokens;
    out.num_scheduled_tokens = c.num_scheduled;
    if (c.num_tokens - c.num_drafts == s.num_tokens() + s.num_pending_samples)
      out.num_samples = r.sampled || r.params.beam.enabled ? 1 : std::max(1, r.params.n);
    if (c.num_drafts > 0) {
      out.draft_token_ids.assign(s.draft_token_ids.begin(),
                                 s.draft_token_ids.begin() + c.num_drafts);
      s.num_drafts_in_flight = c.num_drafts;
    }
    s.draft_token_ids.clear();  // verified now, or left behind by the budget
    // A request about to fork gets its proposals once it has its n sequences.
    if (out.num_samples == 1) out.num_lookahead = num_lookahead(r, s);
    if (c.num_drafts > 0 || out.num_lookahead > 0) in_flight_.back().speculative = true;
    if (!s.known_to_workers) {
      plan.new_seqs.push_back(
          {r.request_id, s.id, s.index, r.num_prompt_tokens, r.params, r.images});
      s.known_to_workers = true;
      s.num_tokens_sent = 0;
      s.table_replaced = true;
    }
    out.new_token_ids.assign(s.token_ids.begin() + s.num_tokens_sent, s.token_ids.end());
    s.num_tokens_sent = s.num_tokens();
    int32_t num_blocks = (c.num_tokens + options_.block_size - 1) / options_.block_size;
    out.replace_table = s.table_replaced;
    if (s.table_replaced || num_blocks != s.num_blocks_sent) {
      std::span<const block_id> table = blocks_.block_table(s.id);
      ACTORLLM_CHECK(static_cast<int32_t>(table.size()) == num_blocks);
      size_t first_new = s.table_replaced ? 0 : static_cast<size_t>(s.num_blocks_sent);
      out.new_block_ids.assign(table.begin() + first_new, table.end());
    }
    s.num_blocks_sent = num_blocks;
    s.table_replaced = false;

    s.num_computed_tokens = c.num_tokens;
    s.num_pending_samples += out.num_samples;
    if (out.num_samples > 0) in_flight_.back().sampling.push_back(s.id);
    b.num_tokens -= c.num_scheduled + c.num_drafts;  // drafts are computed as tokens are
    --b.num_seqs;
    plan.num_scheduled_tokens += c.num_scheduled + c.num_drafts;
    plan.seqs.push_back(std::move(out));
  }
}

bool scheduler::schedule_running(budget& b, step_plan& plan) {
  bool preempted = false;
  for (size_t i = 0; i < running_.size() && b.left(); ++i) {
    request& r = *running_[i];
    for (;;) {
      const bool fits = build_fitting_chunks(r, b);
      if (chunks_.empty()) break;
      if (fits) {
        commit(r, b, plan);
        break;
      }
      if (planning_ahead_) {
        // A preemption changes what the steps in flight hold: it waits for their results.
        needs_plain_schedule_ = true;
        return true;
      }
      // Preempt from the tail (lowest priority; already scheduled requests are ahead of r).
      request& victim = *running_.back();
      if (&victim == &r && i == 0) {
        // Alone on the device and still too big: waiting would never help.
        finish_out_of_cache(r);
        break;
      }
      preempt(victim, plan);
      preempted = true;
      if (&victim == &r) break;
    }
  }
  return preempted;
}

void scheduler::preempt(request& victim, step_plan& plan) {
  leave_queue(victim);
  ++num_preemptions_;
  std::vector<seq_id> ids;
  for (const sequence& s : victim.seqs) {
    if (!s.finished() && blocks_.has_blocks(s.id)) ids.push_back(s.id);
  }
  scheduler_event event{scheduler_event::kind::preempted_by_recompute, victim.request_id,
                        num_steps_, false};
  if (options_.scheduler.preemption == preemption_mode::swap && !ids.empty()) {
    if (blocks_.can_swap_out(ids)) {
      std::vector<block_copy> copies = blocks_.swap_out(ids);
      plan.blocks_to_swap_out.insert(plan.blocks_to_swap_out.end(), copies.begin(), copies.end());
      victim.state = request_state::swapped;
      insert_sorted(swapped_, victim);
      event.what = scheduler_event::kind::preempted_by_swap;
      events_.push_back(std::move(event));
      return;
    }
    event.swap_space_full = true;
  }
  // Recompute: the KV goes, the tokens stay; on readmission the sequence computes
  // prompt + generated tokens again (often from the prefix cache) and samples on from there.
  for (sequence& s : victim.seqs) {
    if (s.finished()) continue;
    blocks_.free(s.id);
    s.num_computed_tokens = 0;
    s.table_replaced = true;
  }
  victim.state = request_state::waiting;
  insert_sorted(waiting_, victim);
  events_.push_back(std::move(event));
}

void scheduler::schedule_swapped(budget& b, step_plan& plan) {
  std::vector<seq_id> ids;
  while (!swapped_.empty() && b.left()) {
    request& r = *swapped_.front();
    if (num_running_seqs_ + r.num_seqs_when_running() > options_.scheduler.max_num_seqs) break;
    if (!adapter_fits(r)) break;
    ids.clear();
    for (const sequence& s : r.seqs) {
      if (!s.finished()) ids.push_back(s.id);
    }
    // Room for one more block per sequence, so that it can decode right away.
    int32_t num_reserved = running_.empty() ? 0 : r.num_live_seqs() + num_watermark_blocks();
    if (!blocks_.can_swap_in(ids, num_reserved)) break;
    std::vector<block_copy> copies = blocks_.swap_in(ids);
    plan.blocks_to_swap_in.insert(plan.blocks_to_swap_in.end(), copies.begin(), copies.end());
    for (sequence& s : r.seqs) s.table_replaced = true;
    swapped_.pop_front();
    enter_running(r);
    if (build_fitting_chunks(r, b) && !chunks_.empty()) commit(r, b, plan);
  }
}

void scheduler::schedule_waiting(budget& b, step_plan& plan) {
  // A request whose adapter would pass max_loras waits in its place; those behind it may go
  // (vLLM does the same), and it is first in line once an adapter leaves the batch.
  std::vector<request*> passed_over;
  while (!waiting_.empty() && b.left()) {
    request& r = *waiting_.front();
    if (!adapter_fits(r)) {
      passed_over.push_back(&r);
      waiting_.pop_front();
      continue;
    }
    if (num_running_seqs_ + r.num_seqs_when_running() > options_.scheduler.max_num_seqs) break;
    build_chunks(r, b);
    if (chunks_.empty()) break;
    bool alone = running_.empty();
    if (!blocks_.can_grow(slots_, alone ? 0 : num_watermark_blocks())) {
      if (!alone) break;  // head of line waits for space (FCFS: nobody overtakes it)
      finish_out_of_cache(r);
      continue;
    }
    waiting_.pop_front();
    enter_running(r);
    commit(r, b, plan);
  }
  waiting_.insert(waiting_.begin(), passed_over.begin(), passed_over.end());
}

bool scheduler::adapter_fits(const request& r) const {
  const int32_t limit = options_.max_loras;
  if (limit <= 0 || r.params.lora_id == 0) return true;
  std::vector<int32_t> adapters;
  for (const request* running : running_) {
    const int32_t id = running->params.lora_id;
    if (id == r.params.lora_id) return true;
    if (id != 0 && std::find(adapters.begin(), adapters.end(), id) == adapters.end())
      adapters.push_back(id);
  }
  return static_cast<int32_t>(adapters.size()) < limit;
}

void scheduler::finish_out_of_cache(request& r) {
  leave_queue(r);
  r.state = request_state::finished;
  events_.push_back({scheduler_event::kind::out_of_kv_cache, r.request_id, num_steps_, false});
  for (sequence& s : r.seqs) {
    if (s.finished()) continue;
    finish_seq(r, s, finish_reason::length);
    pending_outputs_.push_back(output_of(r, s));
  }
  add_unforked_outputs(r, pending_outputs_);
  forget(r);
}

void scheduler::enter_running(request& r) {
  r.state = request_state::running;
  num_running_seqs_ += r.num_seqs_when_running();
  insert_sorted(running_, r);
}

void scheduler::leave_queue(request& r) {
  std::deque<request*>* queue = nullptr;
  switch (r.state) {
    case request_state::waiting:
      queue = &waiting_;
      break;
    case request_state::running:
      queue = &running_;
      break;
    case request_state::swapped:
      queue = &swapped_;
      break;
    case request_state::finished:
      return;
  }
  if (r.state == request_state::running) num_running_seqs_ -= r.num_seqs_when_running();
  // Preemption takes the tail and admission the head: look there first.
  if (!queue->empty() && queue->back() == &r) {
    queue->pop_back();
  } else {
    auto it = std::find(queue->begin(), queue->end(), &r);
    ACTORLLM_CHECK(it != queue->end());
    queue->erase(it);
  }
  r.state = request_state::finished;
}

void scheduler::insert_sorted(std::deque<request*>& queue, request& r) const {
  auto it = std::upper_bound(
      queue.begin(), queue.end(), &r,
      [this](const request* a, const request* b) { return policy_->before(*a, *b); });
  queue.insert(it, &r);
}

int32_t scheduler::num_watermark_blocks() const {
  return static_cast<int32_t>(options_.watermark * options_.num_device_blocks);
}

}  // namespace actorllm
