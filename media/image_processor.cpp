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

// Where transformers' center_crop takes its pixels: output pixel (r, c) is the image's
// (r + floor((h - crop_h) / 2), c + floor((w - crop_w) / 2)) where that lies inside the image,
// else 0 (its zero padding of a smaller image, ceil of the difference over 2 before it, comes
// to the same place).
struct crop_plan {
  int32_t crop_height = 0, crop_width = 0;
  pixel_window source;              // the part of the image inside the crop
  int32_t to_top = 0, to_left = 0;  // where it lands in the crop
};

crop_plan plan_center_crop(int32_t height, int32_t width, int32_t crop_height, int32_t crop_width) {
  const int32_t top = floor_div(height - crop_height, 2);
  const int32_t left = floor_div(width - crop_width, 2);
  crop_plan plan;
  plan.crop_height = crop_height;
  plan.crop_width = crop_width;
  plan.source.top = std::max(top, 0);
  plan.source.left = std::max(left, 0);
  plan.source.height = std::min(height, top + crop_height) - plan.source.top;
  plan.source.width = std::min(width, left + crop_width) - plan.source.left;
  plan.to_top = std::max(-top, 0);
  plan.to_left = std::max(-left, 0);
  return plan;
}

rgb_image crop_source(const rgb_image& image, pixel_window w) {
  rgb_image out;
  out.width = w.width;
  out.height = w.height;
  out.pixels.resize(static_cast<std::size_t>(w.width) * w.height * 3);
  for (int32_t y = 0; y < w.height; ++y) {
    const std::size_t from = (static_cast<std::size_t>(w.top + y) * image.width + w.left) * 3;
    std::copy_n(image.pixels.data() + from, static_cast<std::size_t>(w.width) * 3,
                out.pixels.data() + static_cast<std::size_t>(y) * w.width * 3);
  }
  return out;
}

// `part` (the plan's source window) placed into a zeroed crop.
rgb_image place(const rgb_image& part, const crop_plan& plan) {
  rgb_image out;
  out.width = plan.crop_width;
  out.height = plan.crop_height;
  out.pixels.assign(static_cast<std::size_t>(out.width) * out.height * 3, 0);
  for (int32_t y = 0; y < part.height; ++y) {
    const std::size_t to =
        (static_cast<std::size_t>(plan.to_top + y) * out.width + plan.to_left) * 3;
    std::copy_n(part.pixels.data() + static_cast<std::size_t>(y) * part.width * 3,
                static_cast<std::size_t>(part.width) * 3, out.pixels.data() + to);
  }
  return out;
}

// The resized (and cropped) 8-bit image, or the reason there is none.
struct resized_image {
  rgb_image image;
  std::string error;
};

resized_image resize_and_crop(const rgb_image& image, const image_processor_config& config) {
  if (!config.do_resize) {
    if (!config.do_center_crop) return {image, {}};
    return {center_crop(image, config.crop_height, config.crop_width), {}};
  }
  const output_size_result target = output_size(image.height, image.width, config);
  if (!target.error.empty()) return {{}, target.error};
  const int32_t h = target.size.height, w = target.size.width;
  if (config.do_center_crop) {
    const crop_plan plan = plan_center_crop(h, w, config.crop_height, config.crop_width);
    if (plan.source.height < 1 || plan.source.width < 1) return {place({}, plan), {}};
    return {place(resize_image_window(image, w, h, config.resample, plan.source), plan), {}};
  }
  if (int64_t{h} * w > max_resized_pixels) {
    return {{},
            "resizing a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                " image to " + std::to_string(w) + "x" + std::to_string(h) +
                " would make more than " + std::to_string(max_resized_pixels) + " pixels"};
  }
  return {resize_image(image, w, h, config.resample), {}};
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
  const crop_plan plan = plan_center_crop(image.height, image.width, crop_height, crop_width);
  return place(crop_source(image, plan.source), plan);
}

preprocessed_image preprocess(const rgb_image& image, const image_processor_config& config) {
  ACTORLLM_CHECK(image.width >= 1 && image.height >= 1);
  const resized_image resized = resize_and_crop(image, config);
  if (!resized.error.empty()) return {{}, resized.error};
  const rgb_image* current = &resized.image;
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
