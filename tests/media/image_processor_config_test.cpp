// preprocessor_config.json as the Hub's files spell it: each class's defaults for what a file
// leaves out or sets to null, sizes in their several shapes, and clear errors for what cannot
// be run.
#include "media/image_processor_config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace actorllm::media {
namespace {

image_processor_config parsed(std::string_view text) {
  const parsed_image_processor_config p = parse_image_processor_config(text);
  EXPECT_TRUE(p.ok()) << p.error;
  return p.config;
}

std::string error_of(std::string_view text) {
  return parse_image_processor_config(text).error;
}

TEST(image_processor_config, qwen2_5_vl_takes_the_class_defaults_for_what_it_omits) {
  const image_processor_config c = parsed(R"({"min_pixels": 3136, "max_pixels": 12845056,
      "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
      "image_mean": [0.48145466, 0.4578275, 0.40821073],
      "image_std": [0.26862954, 0.26130258, 0.27577711],
      "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"})");
  EXPECT_EQ(c.kind, image_processor_kind::qwen2_vl);
  EXPECT_TRUE(c.do_resize && c.do_rescale && c.do_normalize);
  EXPECT_FALSE(c.do_center_crop);
  EXPECT_EQ(c.resample, resample_filter::bicubic);
  EXPECT_EQ(c.min_pixels, 3136);
  EXPECT_EQ(c.max_pixels, 12845056);
  EXPECT_DOUBLE_EQ(c.rescale_factor, 1.0 / 255);
}

TEST(image_processor_config, gemma3_nulls_mean_defaults) {
  const image_processor_config c = parsed(R"({"do_convert_rgb": null, "do_normalize": true,
      "do_pan_and_scan": null, "do_rescale": true, "do_resize": true,
      "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor",
      "image_seq_length": 256, "image_std": [0.5, 0.5, 0.5], "pan_and_scan_max_num_crops": null,
      "resample": 2, "rescale_factor": 0.00392156862745098,
      "size": {"height": 896, "width": 896}})");
  EXPECT_EQ(c.kind, image_processor_kind::siglip);
  EXPECT_EQ(c.height, 896);
  EXPECT_EQ(c.width, 896);
  EXPECT_EQ(c.shortest_edge, 0);
  EXPECT_EQ(c.resample, resample_filter::bilinear);
  EXPECT_FALSE(c.do_center_crop);
}

TEST(image_processor_config, integer_sizes_follow_the_class) {
  const image_processor_config clip =
      parsed(R"({"image_processor_type": "CLIPImageProcessor", "size": 224, "crop_size": 200})");
  EXPECT_EQ(clip.shortest_edge, 224);
  EXPECT_EQ(clip.crop_height, 200);
  EXPECT_EQ(clip.crop_width, 200);
  const image_processor_config siglip =
      parsed(R"({"image_processor_type": "SiglipImageProcessor", "size": 384, "image_mean": 0.5})");
  EXPECT_EQ(siglip.height, 384);
  EXPECT_EQ(siglip.width, 384);
  EXPECT_EQ(siglip.image_mean, (std::array<double, 3>{0.5, 0.5, 0.5}));
  const image_processor_config qwen = parsed(R"({"image_processor_type": "Qwen2VLImageProcessor",
      "size": {"shortest_edge": 1000, "longest_edge": 2000000}, "max_pixels": 3000000})");
  EXPECT_EQ(qwen.min_pixels, 1000);
  EXPECT_EQ(qwen.max_pixels, 3000000);  // the explicit key wins, as in transformers
}

TEST(image_processor_config, a_file_without_a_type_takes_the_fallback) {
  EXPECT_NE(error_of(R"({"size": 224})"), "");
  const parsed_image_processor_config p = parse_image_processor_config(
      R"({"size": {"shortest_edge": 336}})", image_processor_kind::clip);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.config.shortest_edge, 336);
}

TEST(image_processor_config, what_cannot_run_is_a_clear_error) {
  EXPECT_NE(error_of("not json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "LlavaNextImageProcessor"})")
                .find("LlavaNextImageProcessor is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "CLIPImageProcessor", "resample": 1})")
                .find("resample 1 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "Gemma3ImageProcessor", "do_pan_and_scan": true})")
                .find("do_pan_and_scan"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "CLIPImageProcessor", "do_resize": "yes"})")
                .find("do_resize must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "CLIPImageProcessor", "image_std": [1, 0, 1]})")
                .find("image_std"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "CLIPImageProcessor", "size": {"height": 5}})")
                .find("size must have"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 10,
                         "max_pixels": 5})")
                .find("min_pixels"),
            std::string::npos);
}

TEST(image_processor_config, a_model_folder_without_the_file_gives_nothing) {
  // One folder per process: the plain and the sanitized test binaries may run at once.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("actorllm-media-config-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(read_image_processor_config(dir).has_value());
  std::ofstream(dir / "preprocessor_config.json")
      << R"({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 336}})";
  const auto read = read_image_processor_config(dir);
  ASSERT_TRUE(read.has_value());
  ASSERT_TRUE(read->ok()) << read->error;
  EXPECT_EQ(read->config.shortest_edge, 336);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace actorllm::media
