#include "actors/gpu_worker/draft_model_proposer.hpp"

#include <algorithm>

#include "actors/gpu_worker/model_runner.hpp"
#include "actors/gpu_worker/sampler.hpp"

namespace actorllm {

draft_model_proposer::draft_model_proposer(std::shared_ptr<const llama_model> draft,
                                           std::unique_ptr<forward_backend> backend,
                                           int32_t block_size, int32_t num_blocks,
                                           int32_t max_token_id)
    : draft_(std::move(draft)),
      backend_(std::move(backend)),
      block_size_(block_size),
      max_token_id_(max_token_id) {
  free_blocks_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_blocks_.push_back(b);
}

bool draft_model_proposer::reserve(draft_sequence& s, int32_t num_positions) {
  const auto needed = static_cast<size_t>((num_positions + block_size_ - 1) / block_size_);
  if (needed <= s.blocks.size()) return true;
  if (needed - s.blocks.size() > free_blocks_.size()) return false;
  while (s.blocks.size() < needed) {
    s.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  return true;
}

void draft_model_proposer::release(draft_sequence& s) {
  free_blocks_.insert(free_blocks_.end(), s.blocks.begin(), s.blocks.end());
  s.blocks.clear();
  s.fed.clear();
}

void draft_model_proposer::propose(const step_plan& plan, const std::vector<batch_sequence>& work,
                                   const sequence_mirror& mirror, step_result& result) {
  for (seq_id id : plan.finished_seq_ids) {
    if (auto it = seqs_.find(id); it != seqs_.end()) {
      release(it->second);
      seqs_.erase(it);
    }
  }
  const int32_t draft_vocab = draft_->config().vocab_size;
  std::vector<proposing> active;
  for (const auto& [seq, sample] : proposals_wanted(work, result)) {
    const std::span<const int32_t> tokens = mirror.tokens(seq->seq);
    const auto num_tokens = static_cast<int32_t>(tokens.size());
    if (num_tokens == 0) continue;
    // A token the draft's embedding table lacks: this sequence gets no proposals.
    if (std::any_of(tokens.begin(), tokens.end(),
                    [&](int32_t t) { return t < 0 || t >= draft_vocab; }))
      continue;
    draft_sequence& s = seqs_[seq->seq];
    // Keep the KV of the longest fed prefix that is still the sequence's, and at least the
    // last token to feed (its logits give the first draft).
    size_t valid = 0;
    while (valid < s.fed.size() && valid < tokens.size() && s.fed[valid] == tokens[valid]) ++valid;
    valid = std::min(valid, tokens.size() - 1);
    s.fed.resize(valid);
    // Positions up to the one of the second-to-last draft are written.
    if (!reserve(s, num_tokens + seq->num_lookahead - 1)) continue;  // pool short: no drafts
    proposing p{&s, sample, seq->num_lookahead, static_cast<int32_t>(valid), {}};
    p.feed.assign(tokens.begin() + static_cast<std::ptrdiff_t>(valid), tokens.end());
    active.push_back(std::move(p));
  }
  // Round j feeds each sequence's pending tokens and reads its next draft off the last row.
  while (!active.empty()) {
    batch_.clear();
    for (const proposing& p : active)
      batch_.add_sequence(p.feed, p.first, p.state->blocks, block_size_, 1);
    batch_.finalize();
    backend_->forward(batch_, logits_);
    std::vector<proposing> next;
    for (size_t i = 0; i < active.size(); ++i) {
      proposing& p = active[i];
      p.state->fed.insert(p.state->fed.end(), p.feed.begin(), p.feed.end());
      const int32_t draft = argmax(std::span<const float>(logits_).subspan(
          i * static_cast<size_t>(draft_vocab), static_cast<size_t>(draft_vocab)));
      if (draft >= max_token_id_) continue;  // the target could not take it
      std::vector<int32_t>& drafts = p.sample->draft_token_ids;
      drafts.push_back(draft);
      if (static_cast<int32_t>(drafts.size()) == p.k) continue;
      p.first += static_cast<int32_t>(p.feed.size());
      p.feed.assign(1, draft);
      next.push_back(std::move(p));
    }
    active = std::move(next);
  }
}

void attach_draft_model(model_runner& runner, const backend_provider& provider,
                        const model_runner_config& config, int32_t target_vocab_size) {
  if (!config.draft_model) return;
  model_runner_config draft = config;
  draft.num_device_blocks = config.num_draft_blocks;
  draft.num_cpu_blocks = 0;
  draft.all_reduce = nullptr;  // whole on every rank: no exchange between ranks
  draft.tp_rank = 0;
  runner.set_proposer(std::make_unique<draft_model_proposer>(
      config.draft_model, provider.make_backend(config.draft_model, draft), config.block_size,
      config.num_draft_blocks, target_vocab_size));
}

}  // namespace actorllm
