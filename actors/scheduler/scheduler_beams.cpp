// Beam search in the scheduler: every beam is a sequence of the request; each round the
// workers send each beam's candidates (sequence_sample::beam_candidates, no token), and once
// every beam has them the request's next beams are chosen (beam_search.hpp). A beam that goes
// on with several tokens forks (its blocks shared, copied on write); a beam that goes on with
// none gives its blocks back; the scheduler sends each beam's next token itself.
#include "actors/scheduler/scheduler.hpp"

namespace actorllm {

namespace {

std::vector<int32_t> output_ids(const request& r, const sequence& s) {
  return {s.token_ids.begin() + r.num_prompt_tokens, s.token_ids.end()};
}

}  // namespace

bool scheduler::keep_beam_candidates(request& r, sequence& s, const sequence_sample& sample) {
  if (!r.params.beam.enabled) return false;
  ACTORLLM_CHECK(sample.token_ids.empty() && s.num_pending_samples == 1);
  s.num_pending_samples = 0;
  s.beam_candidates = sample.beam_candidates;
  s.has_beam_candidates = true;
  return true;
}

void scheduler::advance_beams(request& r, std::vector<request_output>& outputs) {
  const int32_t width = std::max(1, r.params.n);
  if (!r.sampled) {
    // From the width reserved before the first round to the beams themselves.
    if (r.state == request_state::running) num_running_seqs_ -= width - 1;
    r.sampled = true;
  }
  std::vector<int32_t> slots;  // the running beams' places in r.seqs
  std::vector<beam_input> inputs;
  for (int32_t i = 0; i < static_cast<int32_t>(r.seqs.size()); ++i) {
    const sequence& s = r.seqs[i];
    if (s.finished()) continue;
    ACTORLLM_CHECK(s.has_beam_candidates);
    slots.push_back(i);
    inputs.push_back({s.cumulative_logprob, &s.beam_candidates});
  }
  const beam_step step = select_beams(inputs, width, options_.eos_token_ids, r.params.ignore_eos);

  for (const beam_candidate& c : step.complete) {
    beam_hypothesis h{output_ids(r, r.seqs[slots[c.beam]]), c.cumulative_logprob,
                      finish_reason::stop, true};
    h.output_ids.push_back(c.token);  // the router leaves its text out unless asked to keep it
    r.complete_beams.push_back(std::move(h));
  }
  keep_best(r.complete_beams, width, r.num_prompt_tokens, r.params.beam.length_penalty);

  std::vector<std::vector<const beam_candidate*>> children(slots.size());
  for (const beam_candidate& c : step.running) children[c.beam].push_back(&c);
  std::vector<int32_t> free_slots;
  for (size_t b = 0; b < slots.size(); ++b) {
    if (!children[b].empty()) continue;
    finish_seq(r, r.seqs[slots[b]], finish_reason::abort);  // dropped: never reported
    free_slots.push_back(slots[b]);
  }
  // Forks first: a child copies its parent's tokens before the parent takes its own next one.
  for (size_t b = 0; b < slots.size(); ++b) {
    for (size_t j = 1; j < children[b].size(); ++j) {
      int32_t slot = static_cast<int32_t>(r.seqs.size());
      if (!free_slots.empty()) {
        slot = free_slots.back();
        free_slots.pop_back();
      } else {
        r.seqs.emplace_back();
      }
      const sequence& parent = r.seqs[slots[b]];
      sequence child;
      child.id = next_seq_id_++;
      child.index = slot;
      child.token_ids = parent.token_ids;
      child.token_ids.push_back(children[b][j]->token);
      child.num_computed_tokens = parent.num_computed_tokens;
      child.cumulative_logprob = children[b][j]->cumulative_logprob;
      blocks_.fork(parent.id, child.id);
      seqs_[child.id] = {&r, slot};
      r.seqs[slot] = std::move(child);
      if (r.state == request_state::running) ++num_running_seqs_;
    }
  }
  int32_t num_tokens = 0;
  for (size_t b = 0; b < slots.size(); ++b) {
    sequence& s = r.seqs[slots[b]];
    if (children[b].empty()) continue;
    s.token_ids.push_back(children[b][0]->token);  // sent to the workers with the next plan
    s.cumulative_logprob = children[b][0]->cumulative_logprob;
    num_tokens = s.num_tokens();
  }
  for (sequence& s : r.seqs) s.has_beam_candidates = false;

  const bool over =
      step.running.empty() ||
      (r.params.beam.early_stopping && static_cast<int32_t>(r.complete_beams.size()) >= width) ||
      num_tokens - r.num_prompt_tokens >= r.max_output_tokens ||
      num_tokens >= options_.max_model_len;
  if (over) finish_beams(r, outputs);
}

void scheduler::finish_beams(request& r, std::vector<request_output>& outputs) {
  const int32_t width = std::max(1, r.params.n);
  std::vector<beam_hypothesis> answer = std::move(r.complete_beams);
  r.complete_beams.clear();
  for (sequence& s : r.seqs) {
    if (s.finished()) continue;
    answer.push_back({output_ids(r, s), s.cumulative_logprob, finish_reason::length, false});
    finish_seq(r, s, finish_reason::length);
  }
  keep_best(answer, width, r.num_prompt_tokens, r.params.beam.length_penalty);
  for (int32_t i = 0; i < width; ++i) {
    request_output out = output_of(r, r.seqs[0]);
    out.index = i;
    out.finish = finish_reason::length;
    out.stop_token = -1;
    out.num_generated_tokens = 0;
    if (i < static_cast<int32_t>(answer.size())) {
      out.token_ids = std::move(answer[i].output_ids);
      out.finish = answer[i].finish;
      out.cumulative_logprob = answer[i].cumulative_logprob;
      out.num_generated_tokens = static_cast<int32_t>(out.token_ids.size());
    }
    outputs.push_back(std::move(out));
  }
  r.state = request_state::finished;
}

}  // namespace actorllm
