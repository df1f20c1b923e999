#pragma once
/// One step's draws packed for a device backend (forward_backend::try_forward_sample): per
/// logits row the sampling_params that shape the draw and a uniform from the sequence's own
/// generator, and the row's sparse logit edits (logit_bias and the tokens the penalties see)
/// in CSR form. The device then does what the host sampler does to a row, in its order: the
/// structured-output mask, logit_bias, the repetition penalty on prompt and output tokens,
/// presence and frequency penalties on output counts, temperature, top_k, top_p, min_p, and
/// the draw. Plain C++: the kernels read these rows and edits as they are (row_sampling.hpp).
#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/sampling_params.hpp"
#include "kernels/row_sampling.hpp"

namespace actorllm {

class device_draws {
 public:
  /// Row r's edits are edits[edit_offsets[r], edit_offsets[r + 1]).
  std::vector<row_sampling> rows;
  std::vector<int32_t> edit_offsets{0};
  std::vector<logit_edit> edits;

  void clear();
  /// Appends a row drawn as `params` say with `uniform`. `prompt_tokens` and `output_counts`
  /// (the sampler_state's: generated token -> occurrences) feed the penalties exactly as
  /// apply_penalties reads them; ids outside [0, vocab) are skipped, as the host skips them.
  /// An edit is made only for a token that something moves.
  void add(const sampling_params& params, std::span<const int32_t> prompt_tokens,
           const std::unordered_map<int32_t, int32_t>& output_counts, float uniform, int32_t vocab);

 private:
  std::vector<logit_edit> scratch_;  // one row's edits before merging
};

/// Whether a request's draws can be made where the logits are: nothing host-only (logprobs,
/// prompt logprobs, an embedding's pooling), and no seed of its own. The device walks the kept
/// tokens in vocabulary order and the host by probability, so one uniform picks different
/// tokens on each: a seeded request stays on the host, so that its tokens never depend on what
/// shares its batch. The caller also requires one sample per logits row and no drafts.
bool can_draw_on_device(const sampling_params& params);

/// The uniform of one non-greedy device draw: one call of `rng`, as the host sampler's draw
/// makes (std::uniform_real_distribution<double>), so a sequence's generator advances alike on
/// either path; rounded to a float below 1.
float device_draw_uniform(std::mt19937_64& rng);

}  // namespace actorllm
