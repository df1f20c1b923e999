#pragma once
/// The worker's side of structured output: one grammar matcher per (request, sample index),
/// kept in step with the tokens the sequence mirror holds, and each step's allowed-token
/// masks.
///
/// The matcher is a cache of the sequence's generated tokens, not state of its own: before
/// each draw it is brought up to the tokens the plan says the sequence has (replaying what it
/// has not seen, rebuilding when they differ). So a sequence reintroduced after a recompute
/// preemption, a worker restart or an n > 1 fork ends up where its tokens say, without the
/// scheduler knowing anything about grammars.
///
///   prepare(work)   before the forward: catch up, then compute the masks on another thread
///   wait()          after the forward; then mask(i) for each work item, and accept() each draw
///
/// A sequence verifying speculative drafts gets a mask for each verified position: the
/// matcher steps through the drafts (as far as the grammar allows them) and back.
#include <algorithm>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "actors/gpu_worker/sequence_mirror.hpp"
#include "grammar/grammar_compiler.hpp"
#include "grammar/matcher.hpp"

namespace actorllm {

class constraint_tracker {
 public:
  using sample_key = std::pair<std::string, int32_t>;  // (request id, sample index)

  /// `eos_token_ids` end a sequence where its grammar may end (with each request's own
  /// stop_token_ids). A null compiler makes a constrained sequence a std::runtime_error.
  /// `reasoning_end_token`: where a constraint with after_reasoning starts (-1: none).
  constraint_tracker(std::shared_ptr<grammar::grammar_compiler> grammars,
                     std::vector<int32_t> eos_token_ids, int32_t reasoning_end_token = -1);
  ~constraint_tracker();

  /// Brings the matcher of every constrained draw in `work` up to its sequence's tokens, then
  /// starts computing their masks on another thread. `work` must stay alive until wait().
  void prepare(const std::vector<batch_sequence>& work);
  /// Waits for the masks of the last prepare(); returns the seconds they took.
  double wait();
  /// Whether the last prepare() computes any mask (callable before wait()).
  bool any_masks() const {
    return std::any_of(sources_.begin(), sources_.end(), [](auto* m) { return m != nullptr; });
  }
  /// The mask of work item `i` of the last prepare() (empty: the draw is free); `row` 0 is the
  /// position after the sequence's last token, row j the one after its draft j - 1. A row
  /// after a draft the grammar refuses has no mask: verification never reaches it (the draft
  /// before it is masked out, so rejected).
  std::span<const uint32_t> mask(size_t i, size_t row = 0) const;
  /// Advances sample `index` of `seq` by the token drawn for it.
  void accept(const batch_sequence& seq, int32_t index, int32_t token) {
    accept(seq, index, std::span<const int32_t>(&token, 1));
  }
  /// Advances it by the tokens a verification emitted, in order.
  void accept(const batch_sequence& seq, int32_t index, std::span<const int32_t> tokens);
  /// Forgets a finished request's sample.
  void forget(const sample_key& key) { matchers_.erase(key); }

  /// Draws the grammar did not allow (a sampler that ignored the mask: all logits -inf).
  int64_t num_rejected() const { return num_rejected_; }
  size_t num_matchers() const { return matchers_.size(); }

 private:
  struct tracked {
    grammar::matcher matcher;
    std::vector<int32_t> generated;  // tokens accepted, in order
  };
  /// The tokens the grammar follows before the draw; nullopt while the reasoning goes on.
  std::optional<std::span<const int32_t>> constrained_tokens(const batch_sequence& seq) const;
  tracked* catch_up(const batch_sequence& seq, int32_t index);
  tracked make(const batch_sequence& seq) const;
  void compute_masks();

  std::shared_ptr<grammar::grammar_compiler> grammars_;
  std::vector<int32_t> eos_token_ids_;
  int32_t reasoning_end_token_;
  std::map<sample_key, tracked> matchers_;

  // The last prepare(): for each work item, the matcher its mask comes from (null: free),
  // the drafts it verifies, and its masks, one row after another (mask_rows_ of them).
  std::vector<grammar::matcher*> sources_;
  std::vector<std::span<const int32_t>> drafts_;
  std::vector<std::vector<uint32_t>> masks_;
  std::vector<size_t> mask_rows_;
  std::future<double> pending_;
  int64_t num_rejected_ = 0;
};

}  // namespace actorllm
