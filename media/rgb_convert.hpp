#pragma once
/// The pixel conversions PIL applies on the way to RGB, to the byte: the decoders produce rows
/// in the source's own layout and these turn them into (width, 3) RGB rows.
#include <array>
#include <cstdint>
#include <span>

namespace actorllm::media {

/// One channel of an RGBA pixel pasted onto white through its alpha, as vLLM's rgba_to_rgb does
/// with PIL's `paste(image, mask=alpha)`: (255 * (255 - a) + c * a) / 255, rounded by PIL's
/// DIV255 ((t + 128 + ((t + 128) >> 8)) >> 8).
inline uint8_t over_white(uint8_t c, uint8_t a) {
  const unsigned t = 255u * (255u - a) + unsigned{c} * a + 128u;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

/// (width, 4) RGBA to (width, 3) RGB over white.
void rgba_row_over_white(std::span<const uint8_t> rgba, std::span<uint8_t> rgb);

/// (width, 1) gray to (width, 3) RGB.
void gray_row_to_rgb(std::span<const uint8_t> gray, std::span<uint8_t> rgb);

/// A palette as PIL holds it: 256 entries, the given colours first and a gray ramp (i, i, i)
/// after them, so an index past the file's palette still has a colour.
using rgb_palette = std::array<std::array<uint8_t, 3>, 256>;

/// The ramp with `rgb_triplets` (at most 256 colours) written over its first entries.
rgb_palette make_palette(std::span<const uint8_t> rgb_triplets);

/// (width, 1) palette indices to (width, 3) RGB.
void indexed_row_to_rgb(std::span<const uint8_t> indices, const rgb_palette& palette,
                        std::span<uint8_t> rgb);

/// (width, 4) CMYK as libjpeg gives an Adobe JPEG's samples to (width, 3) RGB as PIL does:
/// PIL reads the samples inverted ("CMYK;I") and converts with cmyk2rgb,
/// c' = clip(nk - nk * c / 255) where nk = 255 - k, rounded by MULDIV255.
void adobe_cmyk_row_to_rgb(std::span<const uint8_t> cmyk, std::span<uint8_t> rgb);

}  // namespace actorllm::media
