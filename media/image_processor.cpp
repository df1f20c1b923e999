#include "media/image_processor.hpp"

#include <algorithm>

#include "common/check.hpp"
#include "media/image_resize.hpp"
#include "media/qwen2_vl_patches.hpp"

namespace actorllm::media {

namespace {

// Python's a // b for b > 0.
int32_t floor_div(int32_t a, int32_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

}  // namespace

image_size shortest_edge_size(int32_t height, int32_t width, int32_t shortest_edge) {
  const int32_t short_side = std::min(width, height), long_side = std::max(width, height);
  const double scaled = static_cast<double>(int64_t{shortest_edge} * long_side) / short_side;
  const auto new_long = static_cast<int32_t>(scaled);
  // transformers keeps the long side the height when width <= height.
  if (width <= height) return {new_long, shortest_edge};
  return {shortest_edge, new_long};
}

output_size_result output_size(int32_t height, int32_t width, const image_processor_config& c) {
  if (c.kind == image_processor_kind::qwen2_vl) {
    const smart_resize_result r = smart_resize(height, width, int64_t{c.patch_size} * c.merge_size,
                                               c.min_pixels, c.max_pixels);
    return {r.size, r.error};
  }
  if (c.shortest_edge > 0) return {shortest_edge_size(height, width, c.shortest_edge), {}};
  return {{c.height, c.width}, {}};
}

rgb_image center_crop(const rgb_image& image, int32_t crop_height, int32_t crop_width) {
  const int32_t h = image.height, w = image.width;
  // The window in the coordinates of the image padded to at least the crop's size.
  const int32_t padded_h = std::max(crop_height, h), padded_w = std::max(crop_width, w);
  const int32_t top_pad = (padded_h - h + 1) / 2, left_pad = (padded_w - w + 1) / 2;
  const int32_t top = std::max(floor_div(h - crop_height, 2) + top_pad, 0);
  const int32_t left = std::max(floor_div(w - crop_width, 2) + left_pad, 0);
  const int32_t bottom = std::min(floor_div(h - crop_height, 2) + top_pad + crop_height, padded_h);
  const int32_t right = std::min(floor_div(w - crop_width, 2) + left_pad + crop_width, padded_w);
  rgb_image out;
  out.height = bottom - top;
  out.width = right - left;
  out.pixels.assign(static_cast<std::size_t>(out.height) * out.width * 3, 0);
  for (int32_t y = 0; y < out.height; ++y) {
    const int32_t sy = top + y - top_pad;  // the source row, or none in the padding
    if (sy < 0 || sy >= h) continue;
    for (int32_t x = 0; x < out.width; ++x) {
      const int32_t sx = left + x - left_pad;
      if (sx < 0 || sx >= w) continue;
      const uint8_t* src = image.pixels.data() + (static_cast<std::size_t>(sy) * w + sx) * 3;
      std::copy_n(src, 3, out.pixels.data() + (static_cast<std::size_t>(y) * out.width + x) * 3);
    }
  }
  return out;
}

preprocessed_image preprocess(const rgb_image& image, const image_processor_config& config) {
  ACTORLLM_CHECK(image.width >= 1 && image.height >= 1);
  rgb_image resized;
  const rgb_image* current = &image;
  if (config.do_resize) {
    const output_size_result target = output_size(image.height, image.width, config);
    if (!target.error.empty()) return {{}, target.error};
    resized = resize_image(image, target.size.width, target.size.height, config.resample);
    current = &resized;
  }
  if (config.do_center_crop) {
    resized = center_crop(*current, config.crop_height, config.crop_width);
    current = &resized;
  }
  // numpy's arithmetic, element by element: float64 for the rescale, float32 after it.
  const auto scale = config.rescale_factor;
  float mean[3], std_dev[3];
  for (int c = 0; c < 3; ++c) {
    mean[c] = static_cast<float>(config.image_mean[c]);
    std_dev[c] = static_cast<float>(config.image_std[c]);
  }
  preprocessed_image out;
  pixel_tensor& t = out.tensor;
  t.channels = 3;
  t.height = current->height;
  t.width = current->width;
  const std::size_t plane = static_cast<std::size_t>(t.height) * t.width;
  t.values.resize(3 * plane);
  for (std::size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < 3; ++c) {
      const uint8_t x = current->pixels[3 * i + c];
      float v = config.do_rescale ? static_cast<float>(x * scale) : static_cast<float>(x);
      if (config.do_normalize) v = (v - mean[c]) / std_dev[c];
      t.values[c * plane + i] = v;
    }
  }
  return out;
}

}  // namespace actorllm::media
