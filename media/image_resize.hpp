#pragma once
/// PIL's `Image.resize((width, height), filter)` for 8-bit RGB (reducing_gap None, no box), to
/// the byte, as Hugging Face's image processors call it. BILINEAR and BICUBIC follow
/// libImaging/Resample.c: two separable passes (horizontal first, each only when its side
/// changes), per output pixel a window of `support * max(scale, 1)` source pixels whose filter
/// weights are normalised to sum 1 in double and rounded to 22-bit fixed point; sums start at
/// one half and clip to 0..255. NEAREST follows ImagingScaleAffine: source index
/// int(scale * (i + 0.5)), accumulated in double as PIL does.
#include <cstdint>

#include "media/rgb_image.hpp"

namespace actorllm::media {

/// PIL's Resampling values, as preprocessor_config.json's `resample` holds them.
enum class resample_filter : int32_t { nearest = 0, bilinear = 2, bicubic = 3 };

/// `image` resized to width x height (both at least 1; `image` not empty); the same size gives
/// a copy.
rgb_image resize_image(const rgb_image& image, int32_t width, int32_t height,
                       resample_filter filter);

/// A rectangle of pixels: rows [top, top + height), columns [left, left + width).
struct pixel_window {
  int32_t top = 0, left = 0, height = 0, width = 0;
};

/// The `window` (not empty, inside width x height) of resize_image(image, width, height,
/// filter), equal to it byte for byte, computed without the rest: PIL's every output pixel
/// depends on its own row's and column's weights only. A center crop of a resize costs the
/// crop, however long the resized image's other side.
rgb_image resize_image_window(const rgb_image& image, int32_t width, int32_t height,
                              resample_filter filter, pixel_window window);

}  // namespace actorllm::media
