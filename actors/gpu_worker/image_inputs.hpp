#pragma once
/// A worker's image inputs (a vision-language model): each step, the images whose positions
/// it computes are encoded, those not in the encoder cache in one batch through the backend's
/// vision tower, and the rows at their positions take their embeddings instead of their
/// placeholder token's. A chunk that cuts an image takes its share of the image's rows.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "actors/gpu_worker/encoder_cache.hpp"
#include "actors/gpu_worker/sequence_mirror.hpp"
#include "model/forward_batch.hpp"
#include "model/mrope_positions.hpp"
#include "model/vision_forward.hpp"

namespace actorllm {

class image_inputs {
 public:
  /// Embeddings of `images`, (rows of each image, hidden) end to end.
  using encoder = std::function<void(std::span<const image_pixels>, std::vector<float>&)>;

  struct options {
    int64_t hidden = 0;          ///< the decoder's width
    int64_t cache_bytes = 0;     ///< the encoder cache's bound
    bool bidirectional = false;  ///< an image's rows attend to all of its rows (Gemma 3)
    /// M-RoPE (Qwen2.5-VL): each image token covers token_side x token_side of its image's
    /// pixels, and every row gets its three rotary positions; 0: plain positions.
    int32_t mrope_token_side = 0;
  };

  explicit image_inputs(const options& o) : options_(o), cache_(o.cache_bytes) {}

  /// Encodes the images the step's work computes positions of and the cache lacks. Returns
  /// how many were encoded. Throws std::runtime_error where the encoder's rows do not match
  /// the images' positions (a broken plan).
  int32_t prepare(const std::vector<batch_sequence>& work, uint64_t step, const encoder& encode);
  /// Before `s` is added to `batch` from row `first_row` on: its rows at image positions
  /// take the images' embeddings (batch.embedding_rows / embedding_values) and, where images
  /// are attended both ways, see all of their image (batch.visible_spans; the scheduler never
  /// ends a chunk inside such an image). With M-RoPE, every row of `s` (text, images and
  /// drafts) gets its three positions (batch.axis_positions): call it for every sequence of
  /// the batch, in order.
  void add_rows(const batch_sequence& s, int32_t first_row, uint64_t step, forward_batch& batch);

  const encoder_cache& cache() const { return cache_; }

 private:
  options options_;
  encoder_cache cache_;
  std::vector<mrope_image> mrope_images_;  ///< scratch of add_rows
};

}  // namespace actorllm
