#include "actors/gpu_worker/constraint_tracker.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace actorllm {

namespace {

/// The generated tokens before the position a draw of `seq` samples from.
std::span<const int32_t> generated_before_draw(const batch_sequence& seq) {
  const auto end = static_cast<size_t>(seq.start_position) + seq.token_ids.size();
  const auto prompt = static_cast<size_t>(seq.num_prompt_tokens);
  if (end < prompt || end > seq.all_token_ids.size()) return {};
  return seq.all_token_ids.subspan(prompt, end - prompt);
}

bool is_constrained_draw(const batch_sequence& seq) {
  return seq.num_samples > 0 && seq.params->structured.active();
}

}  // namespace

constraint_tracker::constraint_tracker(std::shared_ptr<grammar::grammar_compiler> grammars,
                                       std::vector<int32_t> eos_token_ids,
                                       int32_t reasoning_end_token)
    : grammars_(std::move(grammars)),
      eos_token_ids_(std::move(eos_token_ids)),
      reasoning_end_token_(reasoning_end_token) {}

std::optional<std::span<const int32_t>> constraint_tracker::constrained_tokens(
    const batch_sequence& seq) const {
  const std::span<const int32_t> generated = generated_before_draw(seq);
  if (!seq.params->structured.after_reasoning || reasoning_end_token_ < 0) return generated;
  // The first end of reasoning, in the prompt (a template that closed it, as Qwen3's does
  // without thinking) or in what was generated.
  const auto before =
      seq.all_token_ids.first(static_cast<size_t>(seq.num_prompt_tokens) + generated.size());
  const auto end = std::find(before.begin(), before.end(), reasoning_end_token_);
  if (end == before.end()) return std::nullopt;
  const auto from = static_cast<size_t>(end - before.begin()) + 1;
  const auto prompt = static_cast<size_t>(seq.num_prompt_tokens);
  return from <= prompt ? generated : generated.subspan(from - prompt);
}

constraint_tracker::~constraint_tracker() {
  if (pending_.valid()) pending_.wait();
}

constraint_tracker::tracked constraint_tracker::make(const batch_sequence& seq) const {
  if (!grammars_)
    throw std::runtime_error("sequence " + std::to_string(seq.seq) +
                             " asks for structured output, and this worker has no grammar "
                             "compiler");
  // The router compiled it already, so in its process this is a cache hit; a remote worker
  // compiles it once here.
  auto grammar = grammars_->compile(seq.params->structured);
  std::vector<int32_t> stop_ids = eos_token_ids_;
  stop_ids.insert(stop_ids.end(), seq.params->stop_token_ids.begin(),
                  seq.params->stop_token_ids.end());
  return tracked{grammar::matcher(std::move(grammar), std::move(stop_ids)), {}};
}

constraint_tracker::tracked* constraint_tracker::catch_up(const batch_sequence& seq,
                                                          int32_t index) {
  const auto constrained = constrained_tokens(seq);
  if (!constrained) return nullptr;  // still reasoning: the draw is free
  const std::span<const int32_t> tokens = *constrained;
  const sample_key key{*seq.request_id, index};
  auto it = matchers_.find(key);
  if (it == matchers_.end()) it = matchers_.emplace(key, make(seq)).first;
  tracked& t = it->second;
  // What the matcher saw must be a prefix of the sequence's tokens; otherwise (a sample the
  // scheduler did not keep) start over from the tokens the plan holds.
  const bool prefix = t.generated.size() <= tokens.size() &&
                      std::equal(t.generated.begin(), t.generated.end(), tokens.begin());
  if (!prefix) t = make(seq);
  for (size_t i = t.generated.size(); i < tokens.size(); ++i) {
    if (!t.matcher.accept_token(tokens[i])) ++num_rejected_;
    t.generated.push_back(tokens[i]);
  }
  return &t;
}

void constraint_tracker::prepare(const std::vector<batch_sequence>& work) {
  if (pending_.valid()) pending_.wait();
  sources_.assign(work.size(), nullptr);
  bool any = false;
  for (size_t i = 0; i < work.size(); ++i) {
    if (!is_constrained_draw(work[i])) continue;
    // A first draw of n > 1 samples draws them all from this state: one mask serves all.
    if (tracked* t = catch_up(work[i], work[i].index)) {
      sources_[i] = &t->matcher;
      any = true;
    }
  }
  masks_.resize(work.size());
  if (!any) return;
  pending_ = std::async(std::launch::async, [this] {
    const auto start = std::chrono::steady_clock::now();
    compute_masks();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

void constraint_tracker::compute_masks() {
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (!sources_[i]) continue;
    masks_[i].resize(sources_[i]->mask_words());
    sources_[i]->fill_mask(masks_[i]);
  }
}

double constraint_tracker::wait() {
  if (!pending_.valid()) return 0.0;
  return pending_.get();
}

std::span<const uint32_t> constraint_tracker::mask(size_t i) const {
  if (i >= sources_.size() || !sources_[i]) return {};
  return masks_[i];
}

void constraint_tracker::accept(const batch_sequence& seq, int32_t index, int32_t token) {
  if (!is_constrained_draw(seq)) return;
  tracked* t = catch_up(seq, index);
  if (!t) return;  // a reasoning token (the end marker itself included)
  if (!t->matcher.accept_token(token)) ++num_rejected_;
  t->generated.push_back(token);
}

}  // namespace actorllm
