#pragma once
/// The host side of Qwen2.5-VL's tower (transformers' Qwen2_5_VisionTransformerPretrainedModel),
/// pure: an image's patch rows as Qwen2VLImageProcessor flattens them, their order window by
/// window (get_window_index), each row's 2-D rotary (rot_pos_emb), and the attention segments.
/// model/vision_forward.cpp runs the tower over this layout through the encoder ops.
#include <cstdint>
#include <string>
#include <vector>

#include "model/vision_config.hpp"

namespace actorllm {

/// One image's grid in patches; both sides multiples of the merge size.
struct patch_grid {
  int64_t height = 0, width = 0;
};

/// The rows of a batch of images as the tower runs them, images end to end.
struct qwen_vision_layout {
  std::vector<float> patches;  ///< (rows, patch_dim), window order
  std::vector<float> rotary;   ///< (rows, head_dim): cosines then sines, window order
  /// For the unit (merged patch) that ran k-th, its output row: images end to end, each in
  /// raster order over its (height / merge, width / merge) grid (get_window_index's
  /// window_index, offset by the units of the images before).
  std::vector<int32_t> unit_order;
  std::vector<int32_t> image_starts{0};   ///< (images + 1) rows
  std::vector<int32_t> window_starts{0};  ///< (windows + 1) rows, no empty window
};

/// The grid of a (channels, height, width) image, or an error naming what does not fit the
/// tower (sides not multiples of patch_size * merge_size, channels).
struct grid_result {
  patch_grid grid;
  std::string error;
};
grid_result qwen_patch_grid(const vision_config& c, int64_t channels, int64_t height,
                            int64_t width);

/// Appends the image (c.num_channels, height, width) float32 to `layout`: its patch rows, each
/// patch's values repeated over temporal_patch_size frames (a still image), reordered window by
/// window, with their rotary rows and segments.
void append_qwen_image(const vision_config& c, const float* pixels, patch_grid grid,
                       qwen_vision_layout& layout);

}  // namespace actorllm
