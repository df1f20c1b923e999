#pragma once
/// One step's draws packed for a device backend (forward_backend::try_forward_sample): per
/// logits row the sampling_params that shape the draw and a uniform from the sequence's own
/// generator, and the row's sparse logit edits (logit_bias and the tokens the penalties see)
/// in CSR form. The device then does what the host sampler does to a row, in its order: the
/// structured-output mask, logit_bias, the repetition penalty on prompt and output tokens,
/// presence and frequency penalties on output counts, temperature, top_k, top_p, min_p, and
/// the draw. Plain C++: no CUDA type (cuda_backend copies it into kernels/cuda's structs).
#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/sampling_params.hpp"

namespace actorllm {

/// One row's parameters (cuda::row_sampling's fields).
struct device_draw {
  float temperature = 0.0f;  ///< <= 0: the argmax of the processed row
  int32_t top_k = 0;         ///< <= 0: no limit
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float uniform = 0.0f;  ///< in [0, 1); 0 for a greedy row
};

/// One token of a row that the bias or a penalty moves (cuda::logit_edit's fields).
struct device_logit_edit {
  int32_t token = 0;         ///< in [0, vocab), ascending and unique within the row
  float bias = 0.0f;         ///< the sum of the request's logit_bias entries for the token
  int32_t output_count = 0;  ///< occurrences in the output (0 unless a presence or frequency
                             ///< penalty is set)
  int32_t seen = 0;          ///< 1: in the prompt or the output, under a repetition penalty

  friend bool operator==(const device_logit_edit&, const device_logit_edit&) = default;
};

class device_draws {
 public:
  /// Row r's edits are edits[edit_offsets[r], edit_offsets[r + 1]).
  std::vector<device_draw> rows;
  std::vector<int32_t> edit_offsets{0};
  std::vector<device_logit_edit> edits;

  void clear();
  /// Appends a row drawn as `params` say with `uniform`. `prompt_tokens` and `output_counts`
  /// (the sampler_state's: generated token -> occurrences) feed the penalties exactly as
  /// apply_penalties reads them; ids outside [0, vocab) are skipped, as the host skips them.
  /// An edit is made only for a token that something moves.
  void add(const sampling_params& params, std::span<const int32_t> prompt_tokens,
           const std::unordered_map<int32_t, int32_t>& output_counts, float uniform, int32_t vocab);

 private:
  std::vector<device_logit_edit> scratch_;  // one row's edits before merging
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
