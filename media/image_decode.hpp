#pragma once
/// Image bytes (PNG, JPEG, WebP, GIF) to RGB pixels, equal byte for byte to what vLLM gets from
/// PIL: `Image.open(...)`, then RGBA composited onto white (vLLM's rgba_to_rgb, with PIL's
/// paste rounding) and every other mode through `Image.convert("RGB")` (gray replicated, gray
/// with alpha losing its alpha, palette colours, 16-bit samples as PIL reads them, CMYK JPEG as
/// PIL converts it). GIF and animated WebP give their first frame.
///
/// Hostile input is an error value, never a crash: the size is checked against image_limits
/// from the header before any pixel memory is taken, and truncated or corrupt data fails.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "media/rgb_image.hpp"

namespace actorllm::media {

/// How large an image may be; a request's image beyond any of them is refused.
struct image_limits {
  std::size_t max_bytes = std::size_t{20} << 20;  // the encoded file
  int64_t max_pixels = 50'000'000;                // width * height
  int32_t max_side = 16384;                       // width and height each
};

enum class image_format { png, jpeg, webp, gif, unknown };

/// The format the magic bytes at the start of `bytes` name.
image_format sniff_image_format(std::span<const uint8_t> bytes);

/// "PNG", "JPEG", "WebP", "GIF" or "unknown".
std::string_view format_name(image_format format);

/// An image or the reason there is none (error is empty exactly when image holds pixels).
struct decoded_image {
  rgb_image image;
  std::string error;

  bool ok() const { return error.empty(); }
};

/// The error a width x height image earns under `limits` (empty when it fits): 0 x 0, a side
/// above max_side, or more than max_pixels pixels.
std::string check_dimensions(int64_t width, int64_t height, const image_limits& limits);

/// Decodes `bytes` to RGB as described above; errors: over max_bytes, "not a PNG, JPEG, WebP or
/// GIF image", over the limits, truncated or corrupt data (the codec's message attached).
decoded_image decode_image(std::span<const uint8_t> bytes, const image_limits& limits = {});

}  // namespace actorllm::media
