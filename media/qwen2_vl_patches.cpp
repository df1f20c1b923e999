#include "media/qwen2_vl_patches.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace actorllm::media {

smart_resize_result smart_resize(int64_t height, int64_t width, int64_t factor, int64_t min_pixels,
                                 int64_t max_pixels) {
  // Python's true division of ints, then its round / floor / ceil; the default rounding mode
  // makes nearbyint round half to even as Python's round does.
  const auto h = static_cast<double>(height), w = static_cast<double>(width);
  const auto f = static_cast<double>(factor);
  const double ratio =
      static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (ratio > 200) {
    return {{}, "absolute aspect ratio must be smaller than 200, got " + std::to_string(ratio)};
  }
  auto h_bar = static_cast<int64_t>(std::nearbyint(h / f)) * factor;
  auto w_bar = static_cast<int64_t>(std::nearbyint(w / f)) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta =
        std::sqrt(static_cast<double>(height * width) / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta =
        std::sqrt(static_cast<double>(min_pixels) / static_cast<double>(height * width));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  constexpr int64_t int32_max = std::numeric_limits<int32_t>::max();
  if (h_bar < 1 || w_bar < 1 || h_bar > int32_max || w_bar > int32_max) {
    return {{},
            "smart_resize gives " + std::to_string(h_bar) + "x" + std::to_string(w_bar) +
                " for a " + std::to_string(height) + "x" + std::to_string(width) + " image"};
  }
  return {{static_cast<int32_t>(h_bar), static_cast<int32_t>(w_bar)}, {}};
}

patchified_image patchify_qwen2_vl(const pixel_tensor& image, const image_processor_config& c) {
  const int32_t p = c.patch_size, m = c.merge_size, tp = c.temporal_patch_size;
  const int32_t unit = p * m;
  if (image.height % unit != 0 || image.width % unit != 0) {
    return {{},
            "a " + std::to_string(image.height) + "x" + std::to_string(image.width) +
                " image does not split into " + std::to_string(unit) + "-pixel blocks"};
  }
  patchified_image out;
  qwen2_vl_patches& q = out.patches;
  const int32_t channels = image.channels;
  // One image is one frame repeated to fill a temporal patch: grid_t is 1.
  q.grid_t = 1;
  q.grid_h = image.height / p;
  q.grid_w = image.width / p;
  q.patch_dim = channels * tp * p * p;
  q.values.resize(static_cast<std::size_t>(q.grid_h) * q.grid_w * q.patch_dim);
  const std::size_t plane = static_cast<std::size_t>(image.height) * image.width;
  float* dst = q.values.data();
  for (int32_t bh = 0; bh < q.grid_h / m; ++bh) {
    for (int32_t bw = 0; bw < q.grid_w / m; ++bw) {
      for (int32_t mh = 0; mh < m; ++mh) {
        for (int32_t mw = 0; mw < m; ++mw) {
          const int32_t y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (int32_t ch = 0; ch < channels; ++ch) {
            const float* src = image.values.data() + ch * plane;
            for (int32_t t = 0; t < tp; ++t) {
              for (int32_t y = 0; y < p; ++y) {
                const float* row = src + static_cast<std::size_t>(y0 + y) * image.width + x0;
                dst = std::copy_n(row, p, dst);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace actorllm::media
