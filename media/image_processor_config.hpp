#pragma once
/// How a model's image processor turns an RGB image into pixel values: the keys of
/// preprocessor_config.json that Hugging Face's CLIPImageProcessor (LLaVA), SiglipImageProcessor
/// and Gemma3ImageProcessor (Gemma 3), and Qwen2VLImageProcessor (Qwen2-VL, Qwen2.5-VL) read,
/// with each class's defaults for the keys a file leaves out (or sets to null).
/// Passive data: parse_image_processor_config fills it, validate() checks it.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "media/image_resize.hpp"

namespace actorllm::media {

/// Which preprocessing the image gets; the Siglip kind covers Gemma 3's processor too.
enum class image_processor_kind { clip, siglip, qwen2_vl };

struct image_processor_config {
  image_processor_kind kind = image_processor_kind::clip;

  bool do_resize = true;
  /// `size`: either {"shortest_edge": n} (the short side becomes n, the long one
  /// int(n * long / short)) or {"height", "width"} (exactly that size). Unused by Qwen2-VL,
  /// whose size comes from smart_resize.
  int32_t shortest_edge = 224;
  int32_t height = 0, width = 0;  // both set for a fixed size (then shortest_edge is 0)
  resample_filter resample = resample_filter::bicubic;

  bool do_center_crop = true;
  int32_t crop_height = 224, crop_width = 224;

  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;

  bool do_normalize = true;
  /// As the JSON gives them (double); normalisation rounds them to float as numpy does.
  std::array<double, 3> image_mean = {0.48145466, 0.4578275, 0.40821073};
  std::array<double, 3> image_std = {0.26862954, 0.26130258, 0.27577711};

  /// The image is RGB already when it reaches the processor (decode_image), so this changes
  /// nothing; kept so that a config reads back as it was written.
  bool do_convert_rgb = true;

  // Qwen2-VL: the area bounds of smart_resize and the patch grid.
  int64_t min_pixels = 56 * 56;
  int64_t max_pixels = 28 * 28 * 1280;
  int32_t patch_size = 14;
  int32_t merge_size = 2;
  int32_t temporal_patch_size = 2;

  /// An error for a config no processor could run (sizes below 1, a zero std, a filter PIL
  /// has but this does not, min_pixels above max_pixels); empty when it is usable.
  std::string validate() const;
};

/// The defaults of a processor class, as its constructor sets them.
image_processor_config default_image_processor_config(image_processor_kind kind);

/// A config or the reason there is none.
struct parsed_image_processor_config {
  image_processor_config config;
  std::string error;

  bool ok() const { return error.empty(); }
};

/// Reads a preprocessor_config.json text. `image_processor_type` picks the class
/// (CLIPImageProcessor, SiglipImageProcessor, Gemma3ImageProcessor, Qwen2VLImageProcessor and
/// their *Fast names); a file without it takes `fallback`'s. Unknown keys are ignored; a known
/// key of the wrong type, an unknown class, Gemma 3's pan-and-scan turned on and an invalid
/// result (validate) are errors.
parsed_image_processor_config parse_image_processor_config(
    std::string_view json_text, std::optional<image_processor_kind> fallback = std::nullopt);

/// The config in `model_dir`/preprocessor_config.json; std::nullopt when the folder has no
/// such file (the caller then supplies defaults). An unreadable or invalid file is an error.
std::optional<parsed_image_processor_config> read_image_processor_config(
    const std::filesystem::path& model_dir,
    std::optional<image_processor_kind> fallback = std::nullopt);

}  // namespace actorllm::media
