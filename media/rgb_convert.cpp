#include "media/rgb_convert.hpp"

#include <algorithm>

namespace actorllm::media {

void rgba_row_over_white(std::span<const uint8_t> rgba, std::span<uint8_t> rgb) {
  const std::size_t width = rgb.size() / 3;
  for (std::size_t x = 0; x < width; ++x) {
    const uint8_t a = rgba[4 * x + 3];
    for (std::size_t c = 0; c < 3; ++c) rgb[3 * x + c] = over_white(rgba[4 * x + c], a);
  }
}

void gray_row_to_rgb(std::span<const uint8_t> gray, std::span<uint8_t> rgb) {
  const std::size_t width = rgb.size() / 3;
  for (std::size_t x = 0; x < width; ++x) rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = gray[x];
}

rgb_palette make_palette(std::span<const uint8_t> rgb_triplets) {
  rgb_palette palette;
  for (std::size_t i = 0; i < palette.size(); ++i) {
    const auto v = static_cast<uint8_t>(i);
    palette[i] = {v, v, v};
  }
  const std::size_t count = std::min<std::size_t>(rgb_triplets.size() / 3, palette.size());
  for (std::size_t i = 0; i < count; ++i) {
    palette[i] = {rgb_triplets[3 * i], rgb_triplets[3 * i + 1], rgb_triplets[3 * i + 2]};
  }
  return palette;
}

void indexed_row_to_rgb(std::span<const uint8_t> indices, const rgb_palette& palette,
                        std::span<uint8_t> rgb) {
  const std::size_t width = rgb.size() / 3;
  for (std::size_t x = 0; x < width; ++x) {
    const auto& colour = palette[indices[x]];
    std::copy(colour.begin(), colour.end(), rgb.begin() + static_cast<std::ptrdiff_t>(3 * x));
  }
}

void adobe_cmyk_row_to_rgb(std::span<const uint8_t> cmyk, std::span<uint8_t> rgb) {
  const std::size_t width = rgb.size() / 3;
  for (std::size_t x = 0; x < width; ++x) {
    const int nk = cmyk[4 * x + 3];  // 255 - k, with k inverted as PIL reads it
    for (std::size_t c = 0; c < 3; ++c) {
      const int v = 255 - cmyk[4 * x + c];  // PIL's "CMYK;I" inversion
      const int t = v * nk + 128;
      const int product = ((t >> 8) + t) >> 8;  // MULDIV255(v, nk)
      rgb[3 * x + c] = static_cast<uint8_t>(std::clamp(nk - product, 0, 255));
    }
  }
}

}  // namespace actorllm::media
