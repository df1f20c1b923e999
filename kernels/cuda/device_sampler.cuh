#pragma once
/// The ends of a step on one device, over its float32 logits (rows, vocab): the logits back to
/// the host, or one token per row chosen on the device (the argmax, or sample_rows' draw),
/// with the structured-output masks applied there first. Masks and draws are asked for once
/// the step is queued, so that the host prepares them while the device computes.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/sampling.cuh"

namespace actorllm::cuda {

/// Allowed-token bitmasks of some logits rows, on the host (structured output).
struct host_token_masks {
  const int32_t* rows = nullptr;    ///< (num_masked) logits rows, each below the step's rows
  const uint32_t* words = nullptr;  ///< (num_masked, words_per_row)
  int64_t num_masked = 0;
  int64_t words_per_row = 0;
};

/// One step's draws on the host, laid out as sample_rows takes them.
struct host_draws {
  const row_sampling* rows = nullptr;     ///< (num_rows), one per logits row
  const int32_t* edit_offsets = nullptr;  ///< (num_rows + 1), [0] = 0, non-decreasing
  const logit_edit* edits = nullptr;      ///< (edit_offsets[num_rows])
  int64_t num_rows = 0;
};

class device_sampler {
 public:
  device_sampler(int64_t vocab, cudaStream_t stream) : vocab_(vocab), stream_(stream) {}

  /// Copies `rows` rows of `logits` into `out` (resized). Synchronous.
  void to_host(const float* logits, int64_t rows, std::vector<float>& out);
  /// tokens (rows) = the argmax of each row (the lowest index among equal maxima), after
  /// `masks` when given. Synchronous.
  void greedy(float* logits, int64_t rows, const std::function<host_token_masks()>& masks,
              std::vector<int32_t>& tokens);
  /// tokens (rows) = each row's draw; draws().num_rows must be `rows`. Throws
  /// std::invalid_argument on draws or masks out of bounds (an edit token outside the
  /// vocabulary or out of order, offsets that do not tile the edits, a mask row outside the
  /// logits or named twice). Synchronous.
  void sample(float* logits, int64_t rows, const std::function<host_draws()>& draws,
              const std::function<host_token_masks()>& masks, std::vector<int32_t>& tokens);

 private:
  /// Checks `masks` against `rows` and queues their upload to mask_rows_ and mask_words_.
  void upload_masks(int64_t rows, const host_token_masks& masks);
  void upload_draws(int64_t rows, const host_draws& draws);

  int64_t vocab_;
  cudaStream_t stream_;
  device_buffer next_tokens_, mask_rows_, mask_words_, draw_rows_, edit_offsets_, edits_,
      mask_of_row_;  // grown on demand
};

}  // namespace actorllm::cuda
