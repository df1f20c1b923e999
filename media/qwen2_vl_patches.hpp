#pragma once
/// Qwen2-VL's dynamic resolution: smart_resize picks the size an image is resized to, and
/// qwen2_vl_patches cuts the preprocessed image into the flattened patches the vision tower
/// reads, in the order of transformers' Qwen2VLImageProcessor._preprocess.
#include <cstdint>
#include <string>
#include <vector>

#include "media/image_processor.hpp"
#include "media/image_processor_config.hpp"

namespace actorllm::media {

struct smart_resize_result {
  image_size size;
  std::string error;
};

/// transformers' smart_resize: both sides multiples of `factor` (patch_size * merge_size), the
/// area within [min_pixels, max_pixels], the aspect ratio kept as closely as possible. Each side
/// is round(side / factor) * factor (Python's round: half to even); if that area exceeds
/// max_pixels, beta = sqrt(h * w / max_pixels) and each side is
/// max(factor, floor(side / beta / factor) * factor); if it is below min_pixels, beta =
/// sqrt(min_pixels / (h * w)) and each side is ceil(side * beta / factor) * factor. An aspect
/// ratio above 200 is an error, as is a result with no pixels or a side past int32.
smart_resize_result smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                 int64_t max_pixels);

struct qwen2_vl_patches {
  int32_t grid_t = 0, grid_h = 0, grid_w = 0;  // in patches
  int32_t patch_dim = 0;  // channels * temporal_patch_size * patch_size * patch_size
  /// (grid_t * grid_h * grid_w, patch_dim). Rows run over (t, h / merge, w / merge, merge_h,
  /// merge_w), so each merge x merge block of patches is contiguous; columns over (channel,
  /// frame, y, x) within a patch.
  std::vector<float> values;
};

/// A patches result or the reason there is none.
struct patchified_image {
  qwen2_vl_patches patches;
  std::string error;

  bool ok() const { return error.empty(); }
};

/// `image` (a preprocess output) repeated to temporal_patch_size frames and cut as
/// Qwen2VLImageProcessor does; its sides must be multiples of patch_size * merge_size.
patchified_image patchify_qwen2_vl(const pixel_tensor& image, const image_processor_config& c);

}  // namespace actorllm::media
