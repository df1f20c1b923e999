#pragma once
/// One logits row's draw made where the logits are: the worker packs a step's rows
/// (actors/gpu_worker/device_draws.hpp) and the device's sampling kernels
/// (kernels/cuda/sampling.cuh) read them as they are, one type from the request's
/// sampling_params to the kernel. Plain C++17.
#include <cstdint>

namespace actorllm {

/// A row's sampling parameters (vLLM's, as sampling_params holds them) and its uniform.
struct row_sampling {
  float temperature = 0.0f;         ///< <= 0: the argmax of the processed row
  int32_t top_k = 0;                ///< <= 0 or >= vocab: no limit
  float top_p = 1.0f;               ///< >= 1: no limit
  float min_p = 0.0f;               ///< <= 0: no limit; above 1 acts as 1
  float repetition_penalty = 1.0f;  ///< on `seen` edits; 1: none
  float presence_penalty = 0.0f;    ///< on edits with output_count > 0
  float frequency_penalty = 0.0f;   ///< times output_count
  float uniform = 0.0f;             ///< the draw, in [0, 1); 0 for a greedy row
};

/// One token of a row that something other than the model moves: its logit bias and what the
/// penalties need to know of it.
struct logit_edit {
  int32_t token = 0;         ///< in [0, vocab); each token at most once per row, ascending
  float bias = 0.0f;         ///< the sum of the request's logit_bias entries, added first
  int32_t output_count = 0;  ///< occurrences in the output so far (presence, frequency)
  int32_t seen = 0;          ///< nonzero: in the prompt or the output (repetition)
};

inline bool operator==(const logit_edit& a, const logit_edit& b) {
  return a.token == b.token && a.bias == b.bias && a.output_count == b.output_count &&
         a.seen == b.seen;
}

}  // namespace actorllm
