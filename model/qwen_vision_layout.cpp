#include "model/qwen_vision_layout.hpp"

#include <algorithm>
#include <cmath>

namespace actorllm {

grid_result qwen_patch_grid(const vision_config& c, int64_t channels, int64_t height,
                            int64_t width) {
  const int64_t block = c.patch_size * c.merge_size;
  if (channels != c.num_channels || height < block || width < block || height % block != 0 ||
      width % block != 0)
    return {{},
            "pixels of " + std::to_string(channels) + "x" + std::to_string(height) + "x" +
                std::to_string(width) + ": the tower takes " + std::to_string(c.num_channels) +
                " channels and sides that are multiples of " + std::to_string(block)};
  return {{height / c.patch_size, width / c.patch_size}, ""};
}

void append_qwen_image(const vision_config& c, const float* pixels, patch_grid grid,
                       qwen_vision_layout& layout) {
  const int64_t p = c.patch_size, m = c.merge_size, frames = c.temporal_patch_size;
  const int64_t image_width = grid.width * p, plane = grid.height * p * image_width;
  const int64_t units_high = grid.height / m, units_wide = grid.width / m;
  const int64_t window = c.window_size / (m * p);  // merge units a side
  const int64_t head_dim = c.head_dim(), half = head_dim / 2, quarter = head_dim / 4;
  // Qwen2_5_VisionRotaryEmbedding(head_dim / 2): a patch's row, then its column, each over
  // head_dim / 4 frequencies.
  std::vector<double> inv_freq(static_cast<size_t>(quarter));
  for (int64_t j = 0; j < quarter; ++j)
    inv_freq[j] = 1.0 / std::pow(10000.0, static_cast<double>(2 * j) / static_cast<double>(half));

  auto add_patch = [&](int64_t py, int64_t px) {
    for (int64_t ch = 0; ch < c.num_channels; ++ch)
      for (int64_t f = 0; f < frames; ++f)
        for (int64_t y = 0; y < p; ++y) {
          const float* src = pixels + ch * plane + (py * p + y) * image_width + px * p;
          layout.patches.insert(layout.patches.end(), src, src + p);
        }
    const size_t at = layout.rotary.size();
    layout.rotary.resize(at + static_cast<size_t>(head_dim));
    float* cos = layout.rotary.data() + at;
    float* sin = cos + half;
    for (int64_t j = 0; j < quarter; ++j) {
      const double row = static_cast<double>(py) * inv_freq[j];
      const double column = static_cast<double>(px) * inv_freq[j];
      cos[j] = static_cast<float>(std::cos(row));
      sin[j] = static_cast<float>(std::sin(row));
      cos[quarter + j] = static_cast<float>(std::cos(column));
      sin[quarter + j] = static_cast<float>(std::sin(column));
    }
  };
  int32_t rows = layout.image_starts.back();
  const auto first_unit = static_cast<int32_t>(layout.unit_order.size());
  for (int64_t wy = 0; wy * window < units_high; ++wy)
    for (int64_t wx = 0; wx * window < units_wide; ++wx) {
      for (int64_t uy = wy * window; uy < std::min(units_high, (wy + 1) * window); ++uy)
        for (int64_t ux = wx * window; ux < std::min(units_wide, (wx + 1) * window); ++ux) {
          layout.unit_order.push_back(first_unit + static_cast<int32_t>(uy * units_wide + ux));
          for (int64_t my = 0; my < m; ++my)
            for (int64_t mx = 0; mx < m; ++mx) add_patch(uy * m + my, ux * m + mx);
          rows += static_cast<int32_t>(m * m);
        }
      layout.window_starts.push_back(rows);
    }
  layout.image_starts.push_back(rows);
}

}  // namespace actorllm
