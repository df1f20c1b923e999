#include "actors/gpu_worker/constraint_tracker.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace actorllm {

namespace {

/// Accepted tokens a matcher can take back: a verification's drafts at most.
constexpr size_t max_rollback = 40;

/// The generated tokens before the position a draw of `seq` samples from (its drafts, if it
/// verifies any, not counted).
std::span<const int32_t> generated_before_draw(const batch_sequence& seq) {
  const auto end = static_cast<size_t>(seq.start_position) + seq.token_ids.size() -
                   static_cast<size_t>(seq.num_drafts);
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
  return tracked{grammar::matcher(std::move(grammar), std::move(stop_ids), max_rollback), {}};
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
  drafts_.assign(work.size(), {});
  mask_rows_.assign(work.size(), 0);
  bool any = false;
  for (size_t i = 0; i < work.size(); ++i) {
    if (!is_constrained_draw(work[i])) continue;
    // A first draw of n > 1 samples draws them all from this state: one mask serves all.
    if (tracked* t = catch_up(work[i], work[i].index)) {
      sources_[i] = &t->matcher;
      drafts_[i] = work[i].token_ids.last(static_cast<size_t>(work[i].num_drafts));
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
    grammar::matcher* m = sources_[i];
    if (!m) continue;
    const size_t words = m->mask_words();
    // One mask per verified position: the matcher steps through the drafts while the grammar
    // allows them, then back.
    size_t num_stepped = 0;
    masks_[i].resize(words * (drafts_[i].size() + 1));
    for (size_t row = 0;; ++row) {
      m->fill_mask(std::span<uint32_t>(masks_[i]).subspan(row * words, words));
      mask_rows_[i] = row + 1;
      if (row == drafts_[i].size() || !m->accept_token(drafts_[i][row])) break;
      ++num_stepped;
    }
    if (num_stepped > 0) m->rollback(num_stepped);
  }
}

double constraint_tracker::wait() {
  if (!pending_.valid()) return 0.0;
  return pending_.get();
}

std::span<const uint32_t> constraint_tracker::mask(size_t i, size_t row) const {
  if (i >= sources_.size() || !sources_[i] || row >= mask_rows_[i]) return {};
  const size_t words = masks_[i].size() / (drafts_[i].size() + 1);
  return std::span<const uint32_t>(masks_[i]).subspan(row * words, words);
}

void constraint_tracker::accept(const batch_sequence& seq, int32_t index,
                                std::span<const int32_t> tokens) {
  if (!is_constrained_draw(seq)) return;
  tracked* t = catch_up(seq, index);
  if (!t) return;  // a reasoning token (the end marker itself included)
  for (int32_t token : tokens) {
    if (!t->matcher.accept_token(token)) ++num_rejected_;
    t->generated.push_back(token);
  }
}

}  // namespace actorllm
