#pragma once
/// An RGB image to the pixel values a Hugging Face image processor gives for it (the PIL
/// implementations: CLIPImageProcessor, SiglipImageProcessor / Gemma3ImageProcessor,
/// Qwen2VLImageProcessor), step for step as transformers takes them: the output size, PIL's
/// resize of the 8-bit image, the center crop, rescale (the uint8 value times rescale_factor in
/// double, then rounded to float) and normalize ((x - mean) / std in float, mean and std
/// rounded to float), channels first.
#include <cstdint>
#include <string>
#include <vector>

#include "media/image_processor_config.hpp"
#include "media/rgb_image.hpp"

namespace actorllm::media {

struct pixel_tensor {
  int32_t channels = 0, height = 0, width = 0;
  std::vector<float> values;  // (channels, height, width)
};

/// A tensor or the reason there is none.
struct preprocessed_image {
  pixel_tensor tensor;
  std::string error;

  bool ok() const { return error.empty(); }
};

struct image_size {
  int32_t height = 0, width = 0;
};

/// transformers' get_resize_output_image_size(default_to_square=False): the short side becomes
/// `shortest_edge` and the long one int(shortest_edge * long / short) (true division,
/// truncated).
image_size shortest_edge_size(int32_t height, int32_t width, int32_t shortest_edge);

/// The size the processor resizes a height x width image to: shortest_edge_size, the fixed
/// height and width, or Qwen2-VL's smart_resize (whose refusal is the error).
struct output_size_result {
  image_size size;
  std::string error;
};
output_size_result output_size(int32_t height, int32_t width, const image_processor_config& c);

/// transformers' center_crop: the crop_height x crop_width window at top = (h - crop_h) // 2,
/// left = (w - crop_w) // 2 (floor division); where the image is smaller than the crop it is
/// first padded with zeros, ceil((crop - side) / 2) before it, as transformers pads it.
rgb_image center_crop(const rgb_image& image, int32_t crop_height, int32_t crop_width);

/// The most pixels a resize without a crop may make (a CLIP shortest edge on a 1 x 16384
/// image would ask for billions): more is an error, where transformers would exhaust memory.
/// With a crop only the crop is computed, so its size alone counts.
constexpr int64_t max_resized_pixels = 50'000'000;

/// `image` (not empty) through the processor `config` describes (valid: config.validate()).
/// For Qwen2-VL this is the resized, normalised image; qwen2_vl_patches cuts it into patches.
preprocessed_image preprocess(const rgb_image& image, const image_processor_config& config);

}  // namespace actorllm::media
