#pragma once
/// The workers' side of step_plan: a mirror of every sequence the workers know (its tokens,
/// block table, sampling parameters) that applies each plan's diffs and lists the step's work
/// flat, one entry per scheduled sequence. Pure data, no tensors: a gpu_worker keeps one and
/// feeds the entries to its forward pass and sampler.
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/step_plan.hpp"

namespace actorllm {

/// One sequence's work in a step. The spans point into the mirror and stay valid until the
/// next apply().
struct batch_sequence {
  seq_id seq = 0;
  const std::string* request_id = nullptr;
  int32_t index = 0;  ///< sample index in [0, n)
  const sampling_params* params = nullptr;
  int32_t num_prompt_tokens = 0;
  int32_t start_position = 0;              ///< position of token_ids[0]
  std::span<const int32_t> token_ids;      ///< to compute: positions [start, start + size)
                                           ///< (its last num_drafts are drafts to verify)
  std::span<const int32_t> all_token_ids;  ///< prompt + generated so far (penalties), no drafts
  std::span<const block_id> block_table;   ///< position p lives in block_table[p / block_size]
  int32_t num_samples = 0;                 ///< tokens to sample from the last position
  int32_t num_drafts = 0;                  ///< speculative drafts at the end of token_ids
  int32_t num_lookahead = 0;               ///< proposals wanted after this step
  /// The prompt's images: their positions hold the model's placeholder here, and the rows of
  /// token_ids at them take the images' embeddings.
  std::span<const prompt_image> images;
};

class sequence_mirror {
 public:
  /// Forgets finished sequences, learns new ones, applies the diffs; returns the step's work
  /// in plan order. The swaps and copies of the plan are left to the caller.
  std::vector<batch_sequence> apply(const step_plan& plan);
  /// Keeps the step's lone samples (one token for a sequence) as the sequences' next tokens:
  /// the scheduler counts them as known to the workers and never sends them back, so a step
  /// planned before the sample was drawn can compute it. A request's first sampling with
  /// n > 1 forks, and the scheduler introduces each sample's sequence in full instead. A
  /// sequence that verified drafts drops them and keeps every token it got instead.
  void append_samples(const step_result& result);
  /// Every token of a known sequence (prompt and generated, no drafts); empty if unknown.
  std::span<const int32_t> tokens(seq_id seq) const;

  int32_t num_sequences() const { return static_cast<int32_t>(seqs_.size()); }
  bool knows(seq_id seq) const { return seqs_.count(seq) != 0; }

 private:
  struct state {
    std::string request_id;
    int32_t index = 0;
    int32_t num_prompt_tokens = 0;
    sampling_params params;
    std::vector<int32_t> token_ids;
    std::vector<block_id> block_table;
    int32_t num_drafts = 0;  // at the end of token_ids while a step verifies them
    std::vector<prompt_image> images;
  };
  /// The placeholder back at the images' positions among token_ids[from..]: the plan carries
  /// the images' key tokens there.
  static void restore_placeholders(state& s, size_t from);
  static void drop_drafts(state& s);

  std::unordered_map<seq_id, state> seqs_;
};

}  // namespace actorllm
