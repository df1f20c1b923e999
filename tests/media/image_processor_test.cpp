// The pixel values of transformers' image processors (tests/media/pil_reference.py re-enacts
// CLIPImageProcessor, Gemma3ImageProcessor and Qwen2VLImageProcessor in numpy over PIL's
// resize) for LLaVA-1.5, Gemma 3 and Qwen2-VL configs as their preprocessor_config.json files
// spell them; smart_resize against transformers' rounding.
#include "media/image_processor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "media/qwen2_vl_patches.hpp"
#include "tests/media/pil_reference.hpp"

namespace actorllm::media {
namespace {

using testing::pil;

// The largest |a - b|, and how many values are not bit-for-bit equal.
struct float_difference {
  double max_abs = 0;
  std::size_t unequal = 0;
};

float_difference compare(const std::vector<float>& a, const std::vector<float>& b) {
  float_difference d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d.max_abs = std::max(d.max_abs, std::fabs(double(a[i]) - b[i]));
    d.unequal += a[i] != b[i];
  }
  return d;
}

TEST(image_processor, equals_transformers_for_llava_gemma3_and_qwen2_vl) {
  ASSERT_EQ(pil().error, "");
  ASSERT_FALSE(pil().manifest["preprocess"].empty());
  for (const auto& c : pil().manifest["preprocess"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name + ": " + c["config"].dump());
    const parsed_image_processor_config parsed = parse_image_processor_config(c["config"].dump());
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    rgb_image in;
    in.width = c["width"];
    in.height = c["height"];
    in.pixels = testing::read_bytes(pil().dir / (name + ".in.rgb"));
    const preprocessed_image got = preprocess(in, parsed.config);
    ASSERT_TRUE(got.ok()) << got.error;
    const auto shape = c["shape"].get<std::vector<int32_t>>();
    ASSERT_EQ((std::vector<int32_t>{got.tensor.channels, got.tensor.height, got.tensor.width}),
              shape);
    const std::vector<float> want = testing::read_floats(pil().dir / (name + ".values.f32"));
    ASSERT_EQ(got.tensor.values.size(), want.size());
    const float_difference values = compare(got.tensor.values, want);
    EXPECT_LE(values.max_abs, 1e-6);
    EXPECT_EQ(values.unequal, 0u) << "max |difference| " << values.max_abs;
    if (!c.contains("grid")) continue;

    const patchified_image patches = patchify_qwen2_vl(got.tensor, parsed.config);
    ASSERT_TRUE(patches.ok()) << patches.error;
    const qwen2_vl_patches& q = patches.patches;
    EXPECT_EQ((std::vector<int32_t>{q.grid_t, q.grid_h, q.grid_w}),
              c["grid"].get<std::vector<int32_t>>());
    const auto patches_shape = c["patches_shape"].get<std::vector<int64_t>>();
    EXPECT_EQ(int64_t{q.grid_t} * q.grid_h * q.grid_w, patches_shape[0]);
    EXPECT_EQ(q.patch_dim, patches_shape[1]);
    const std::vector<float> want_patches =
        testing::read_floats(pil().dir / (name + ".patches.f32"));
    ASSERT_EQ(q.values.size(), want_patches.size());
    EXPECT_EQ(compare(q.values, want_patches).unequal, 0u);
  }
}

TEST(image_processor, smart_resize_rounds_as_transformers_does) {
  ASSERT_EQ(pil().error, "");
  ASSERT_FALSE(pil().manifest["smart_resize"].empty());
  for (const auto& c : pil().manifest["smart_resize"]) {
    SCOPED_TRACE(c.dump());
    const smart_resize_result got =
        smart_resize(c["height"], c["width"], 28, c["min_pixels"], c["max_pixels"]);
    if (c["size"].is_null()) {
      EXPECT_NE(got.error.find("aspect ratio must be smaller than 200"), std::string::npos)
          << got.error;
      continue;
    }
    ASSERT_EQ(got.error, "");
    EXPECT_EQ(got.size.height, c["size"][0].get<int32_t>());
    EXPECT_EQ(got.size.width, c["size"][1].get<int32_t>());
  }
}

TEST(image_processor, a_sliver_costs_its_crop_and_without_a_crop_is_refused) {
  // 16384x1: CLIP's shortest edge 336 makes it 5505024x336, of which the crop is 336x336.
  rgb_image sliver{16384, 1, std::vector<uint8_t>(16384 * 3, 200)};
  image_processor_config clip = default_image_processor_config(image_processor_kind::clip);
  clip.shortest_edge = 336;
  clip.crop_height = clip.crop_width = 336;
  const auto start = std::chrono::steady_clock::now();
  const preprocessed_image cropped = preprocess(sliver, clip);
  ASSERT_TRUE(cropped.ok()) << cropped.error;
  EXPECT_EQ(cropped.tensor.width, 336);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  clip.do_center_crop = false;
  const preprocessed_image whole = preprocess(sliver, clip);
  EXPECT_NE(whole.error.find("would make more than 50000000 pixels"), std::string::npos)
      << whole.error;
}

TEST(image_processor, shortest_edge_truncates_the_long_side) {
  EXPECT_EQ(shortest_edge_size(480, 640, 336).width, 448);
  EXPECT_EQ(shortest_edge_size(997, 203, 336).height, 1650);  // 336 * 997 / 203 = 1650.17
  EXPECT_EQ(shortest_edge_size(997, 203, 336).width, 336);
  EXPECT_EQ(shortest_edge_size(5, 5, 7).height, 7);
}

TEST(image_processor, center_crop_pads_a_small_image_as_transformers_does) {
  // A 1x3 image into a 2x4 crop: padded to 2x4 with top_pad ceil(1/2) = 1, left_pad 1.
  const rgb_image in{3, 1, {1, 1, 1, 2, 2, 2, 3, 3, 3}};
  const rgb_image out = center_crop(in, 2, 4);
  ASSERT_EQ(out.width, 4);
  ASSERT_EQ(out.height, 2);
  const std::vector<uint8_t> want = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                     0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
  EXPECT_EQ(out.pixels, want);
}

}  // namespace
}  // namespace actorllm::media
