// PIL's Image.resize to the byte: random images up and down, odd sides, one axis at a time,
// extremes of aspect, each filter (tests/media/pil_reference.py); and the time a camera-sized
// image takes.
#include "media/image_resize.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "tests/media/pil_reference.hpp"
#include "tests/support/sanitizers.hpp"

namespace actorllm::media {
namespace {

using testing::pil;

TEST(image_resize, equals_pil_for_every_case) {
  ASSERT_EQ(pil().error, "");
  ASSERT_FALSE(pil().manifest["resize"].empty());
  for (const auto& c : pil().manifest["resize"]) {
    const std::string name = c["name"];
    const int32_t to_width = c["to_width"], to_height = c["to_height"];
    const auto filter = static_cast<resample_filter>(c["resample"].get<int32_t>());
    SCOPED_TRACE(name + ": " + c.dump());
    rgb_image in;
    in.width = c["width"];
    in.height = c["height"];
    in.pixels = testing::read_bytes(pil().dir / (name + ".in.rgb"));
    ASSERT_EQ(in.pixels.size(), std::size_t(in.width) * in.height * 3);
    const rgb_image got = resize_image(in, to_width, to_height, filter);
    ASSERT_EQ(got.width, to_width);
    ASSERT_EQ(got.height, to_height);
    const std::vector<uint8_t> want = testing::read_bytes(pil().dir / (name + ".out.rgb"));
    ASSERT_EQ(got.pixels.size(), want.size());
    const std::ptrdiff_t at = testing::first_difference(got.pixels, want);
    EXPECT_EQ(at, -1) << "pixel " << at / 3 << " channel " << at % 3 << ": got "
                      << int{got.pixels[at]} << ", PIL " << int{want[at]};
  }
}

TEST(image_resize, a_window_equals_the_same_window_of_the_whole_resize) {
  ASSERT_EQ(pil().error, "");
  std::mt19937 random(99);
  for (const auto& c : pil().manifest["resize"]) {
    const int32_t to_width = c["to_width"], to_height = c["to_height"];
    const auto filter = static_cast<resample_filter>(c["resample"].get<int32_t>());
    rgb_image in;
    in.width = c["width"];
    in.height = c["height"];
    in.pixels = testing::read_bytes(pil().dir / (c["name"].get<std::string>() + ".in.rgb"));
    const rgb_image whole = resize_image(in, to_width, to_height, filter);
    for (int trial = 0; trial < 3; ++trial) {
      pixel_window w;
      w.top = int32_t(random() % to_height);
      w.left = int32_t(random() % to_width);
      w.height = 1 + int32_t(random() % (to_height - w.top));
      w.width = 1 + int32_t(random() % (to_width - w.left));
      SCOPED_TRACE(c.dump() + " window " + std::to_string(w.top) + "," + std::to_string(w.left) +
                   " " + std::to_string(w.height) + "x" + std::to_string(w.width));
      const rgb_image got = resize_image_window(in, to_width, to_height, filter, w);
      ASSERT_EQ(got.width, w.width);
      ASSERT_EQ(got.height, w.height);
      for (int32_t y = 0; y < w.height; ++y) {
        const auto row = whole.pixels.begin() + (std::ptrdiff_t(w.top + y) * to_width + w.left) * 3;
        ASSERT_TRUE(std::equal(row, row + std::ptrdiff_t(w.width) * 3,
                               got.pixels.begin() + std::ptrdiff_t(y) * w.width * 3))
            << "row " << y;
      }
    }
  }
}

TEST(image_resize, the_same_size_is_a_copy) {
  rgb_image in{2, 1, {1, 2, 3, 4, 5, 6}};
  for (auto filter :
       {resample_filter::nearest, resample_filter::bilinear, resample_filter::bicubic}) {
    EXPECT_EQ(resize_image(in, 2, 1, filter).pixels, in.pixels);
  }
}

TEST(image_resize, a_camera_image_to_clip_size_is_fast) {
  // 4000x3000 to LLaVA's 448x336 (shortest edge 336): about 50 million filter taps.
  rgb_image in;
  in.width = 4000;
  in.height = 3000;
  in.pixels.resize(std::size_t(in.width) * in.height * 3);
  for (std::size_t i = 0; i < in.pixels.size(); ++i) in.pixels[i] = uint8_t(i * 7 + i / 4001);
  // The best of three runs: a loaded machine (parallel tests, two cores) may stall any one.
  double ms = 1e9;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    const rgb_image out = resize_image(in, 448, 336, resample_filter::bicubic);
    ms = std::min(
        ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count());
    EXPECT_EQ(out.pixels.size(), 448u * 336 * 3);
  }
  std::printf("4000x3000 -> 448x336 bicubic: %.1f ms\n", ms);
  // Instrumented builds run several times slower; the bound is for an optimised one.
  if (!actorllm::testing::address_sanitized()) {
    EXPECT_LT(ms, 100.0);
  }
}

}  // namespace
}  // namespace actorllm::media
