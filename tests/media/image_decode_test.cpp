// Every format and pixel mode vLLM meets, written by PIL with random content and decoded to the
// bytes PIL gives after vLLM's RGB conversion (tests/media/pil_reference.py).
#include "media/image_decode.hpp"

#include <gtest/gtest.h>

#include <set>

#include "media/rgb_convert.hpp"
#include "tests/media/pil_reference.hpp"

namespace actorllm::media {
namespace {

using testing::pil;

TEST(image_decode, equals_pil_after_vllm_rgb_conversion_for_every_case) {
  ASSERT_EQ(pil().error, "");
  std::set<image_format> formats;
  for (const auto& c : pil().manifest["decode"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    const std::vector<uint8_t> bytes = testing::read_bytes(pil().dir / file);
    formats.insert(sniff_image_format(bytes));
    const decoded_image got = decode_image(bytes);
    ASSERT_TRUE(got.ok()) << got.error;
    ASSERT_EQ(got.image.width, c["width"].get<int32_t>());
    ASSERT_EQ(got.image.height, c["height"].get<int32_t>());
    const std::vector<uint8_t> want = testing::read_bytes(pil().dir / (file + ".rgb"));
    ASSERT_EQ(got.image.pixels.size(), want.size());
    const std::ptrdiff_t at = testing::first_difference(got.image.pixels, want);
    EXPECT_EQ(at, -1) << "pixel " << at / 3 << " channel " << at % 3 << ": got "
                      << int{got.image.pixels[at]} << ", PIL " << int{want[at]};
  }
  EXPECT_EQ(formats, (std::set<image_format>{image_format::png, image_format::jpeg,
                                             image_format::webp, image_format::gif}));
}

TEST(image_decode, sniffs_the_format_from_magic_bytes_alone) {
  using namespace std::literals;
  auto sniff = [](std::string_view s) {
    return sniff_image_format({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(sniff("\x89PNG\r\n\x1a\n"sv), image_format::png);
  EXPECT_EQ(sniff("\xff\xd8\xff\xe0"sv), image_format::jpeg);
  EXPECT_EQ(sniff("RIFF\x10\0\0\0WEBPVP8 "sv), image_format::webp);
  EXPECT_EQ(sniff("RIFF\x10\0\0\0WAVEfmt "sv), image_format::unknown);
  EXPECT_EQ(sniff("GIF89a"sv), image_format::gif);
  EXPECT_EQ(sniff("GIF87a"sv), image_format::gif);
  EXPECT_EQ(sniff("GIF88a"sv), image_format::unknown);
  EXPECT_EQ(sniff("\x89PN"sv), image_format::unknown);
  EXPECT_EQ(sniff(""sv), image_format::unknown);
}

TEST(image_decode, over_white_is_pil_paste_with_an_alpha_mask) {
  // PIL's BLEND with DIV255, worked by hand: (255 * (255 - a) + c * a + 128) / 255, rounded
  // through (t + (t >> 8)) >> 8.
  EXPECT_EQ(over_white(0, 0), 255);
  EXPECT_EQ(over_white(0, 255), 0);
  EXPECT_EQ(over_white(200, 255), 200);
  EXPECT_EQ(over_white(0, 128), 127);   // 255 * 127 = 32385 -> 127.0
  EXPECT_EQ(over_white(100, 77), 208);  // 45390 + 7700 = 53090 -> 208.2
  EXPECT_EQ(over_white(10, 1), 254);    // 64770 + 10 = 64780 -> 254.04
}

}  // namespace
}  // namespace actorllm::media
