// Hostile bytes: each is a clear error value, never a crash, an exit or a leak (CI runs this
// under AddressSanitizer too). Truncations cut PIL-written files; size bombs patch the size
// fields of real headers, and are refused before pixel memory is taken.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "media/image_decode.hpp"
#include "tests/media/pil_reference.hpp"

namespace actorllm::media {
namespace {

using testing::pil;

std::vector<uint8_t> file(const std::string& name) {
  return testing::read_bytes(pil().dir / name);
}

void expect_error(const std::vector<uint8_t>& bytes, std::string_view contains,
                  const image_limits& limits = {}) {
  const decoded_image got = decode_image(bytes, limits);
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.error.find(contains), std::string::npos) << got.error;
  EXPECT_TRUE(got.image.pixels.empty());
}

void put_be32(std::vector<uint8_t>& bytes, std::size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = uint8_t(v >> (24 - 8 * i));
}

// PNG's CRC-32 (ISO 3309), bit by bit.
uint32_t png_crc(const uint8_t* data, std::size_t size) {
  uint32_t crc = 0xffffffffu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

// A PNG whose IHDR claims width x height, with a correct CRC, then the head of an IDAT chunk
// (where libpng stops reading the header) and no data.
std::vector<uint8_t> png_header(uint32_t width, uint32_t height) {
  std::vector<uint8_t> bytes = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                0,    0,   0,   13,  'I',  'H',  'D',  'R'};
  bytes.resize(bytes.size() + 13);
  put_be32(bytes, 16, width);
  put_be32(bytes, 20, height);
  bytes[24] = 8, bytes[25] = 2;  // 8-bit RGB
  const uint32_t crc = png_crc(bytes.data() + 12, 17);
  bytes.resize(bytes.size() + 4);
  put_be32(bytes, 29, crc);
  bytes.insert(bytes.end(), {0, 0, 0, 16, 'I', 'D', 'A', 'T'});
  return bytes;
}

TEST(hostile_image, truncated_files_of_every_format_are_errors) {
  ASSERT_EQ(pil().error, "");
  for (const char* name :
       {"png_rgb.png", "png_rgba_interlaced.png", "jpeg_420.jpg", "jpeg_progressive.jpg",
        "webp_lossy.webp", "webp_lossless_alpha.webp", "webp_animated.webp", "gif_static.gif"}) {
    const std::vector<uint8_t> whole = file(name);
    for (double keep : {0.05, 0.5, 0.9}) {
      SCOPED_TRACE(std::string(name) + " cut to " + std::to_string(keep));
      const std::vector<uint8_t> cut(whole.begin(),
                                     whole.begin() + std::ptrdiff_t(whole.size() * keep));
      expect_error(cut, "");
    }
  }
}

TEST(hostile_image, an_animated_gif_cut_after_its_first_frame_still_gives_that_frame) {
  // PIL reads no further than the frame it loads; the later frames' truncation goes unseen.
  ASSERT_EQ(pil().error, "");
  const std::vector<uint8_t> whole = file("gif_animated.gif");
  const std::vector<uint8_t> cut(whole.begin(), whole.begin() + std::ptrdiff_t(whole.size() * 0.9));
  const decoded_image got = decode_image(cut);
  ASSERT_TRUE(got.ok()) << got.error;
  EXPECT_EQ(got.image.pixels, testing::read_bytes(pil().dir / "gif_animated.gif.rgb"));
  expect_error({whole.begin(), whole.begin() + std::ptrdiff_t(whole.size() / 2)}, "GIF: ");
}

TEST(hostile_image, what_is_no_known_format_is_refused_by_name) {
  const std::string text = "<html>not an image</html>";
  expect_error({text.begin(), text.end()}, "not a PNG, JPEG, WebP or GIF image");
  expect_error({}, "not a PNG, JPEG, WebP or GIF image");
  expect_error({'G', 'I', 'F', '8', '8', 'a', 1, 0, 1, 0}, "not a PNG, JPEG, WebP or GIF image");
}

TEST(hostile_image, magic_bytes_alone_are_errors) {
  expect_error({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, "PNG: ");
  expect_error({0xff, 0xd8, 0xff}, "JPEG: ");
  expect_error({'R', 'I', 'F', 'F', 4, 0, 0, 0, 'W', 'E', 'B', 'P'}, "WebP: ");
  expect_error({'G', 'I', 'F', '8', '9', 'a'}, "GIF: ");
}

TEST(hostile_image, images_without_pixels_are_errors) {
  expect_error(png_header(0, 0), "PNG: ");
  expect_error(png_header(10, 0), "PNG: ");
  ASSERT_EQ(pil().error, "");
  std::vector<uint8_t> gif = file("gif_small.gif");
  // Screen 0x0 and, in the image descriptor after the 13-byte header and its palette, a 0x0
  // frame.
  std::memset(gif.data() + 6, 0, 4);
  const std::size_t palette = (gif[10] & 0x80) ? 3u << ((gif[10] & 7) + 1) : 0;
  std::size_t at = 13 + palette;
  while (gif[at] == '!') {  // extensions: label, then sub-blocks to a zero length
    at += 2;
    while (gif[at]) at += gif[at] + 1;
    ++at;
  }
  ASSERT_EQ(gif[at], ',');
  std::memset(gif.data() + at + 5, 0, 4);
  expect_error(gif, "no pixels");
}

TEST(hostile_image, a_30000_by_30000_header_is_refused_fast) {
  ASSERT_EQ(pil().error, "");
  std::vector<std::vector<uint8_t>> bombs;
  bombs.push_back(png_header(30000, 30000));
  std::vector<uint8_t> jpeg = file("jpeg_420.jpg");
  for (std::size_t i = 2; i + 9 < jpeg.size(); i += 2 + (jpeg[i + 2] << 8 | jpeg[i + 3])) {
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {  // SOF0: length, precision, height, width
      jpeg[i + 5] = jpeg[i + 7] = 30000 >> 8;
      jpeg[i + 6] = jpeg[i + 8] = 30000 & 0xff;
      break;
    }
  }
  bombs.push_back(jpeg);
  std::vector<uint8_t> webp = file("webp_animated.webp");  // VP8X: canvas size - 1, 24 bits each
  ASSERT_EQ(std::string(webp.begin() + 12, webp.begin() + 16), "VP8X");
  for (int side : {24, 27}) {
    webp[side] = (30000 - 1) & 0xff, webp[side + 1] = (30000 - 1) >> 8, webp[side + 2] = 0;
  }
  bombs.push_back(webp);
  std::vector<uint8_t> gif = file("gif_static.gif");  // the logical screen
  gif[6] = gif[8] = 30000 & 0xff, gif[7] = gif[9] = 30000 >> 8;
  bombs.push_back(gif);
  for (const auto& bomb : bombs) {
    SCOPED_TRACE(std::string(format_name(sniff_image_format(bomb))));
    const auto start = std::chrono::steady_clock::now();
    expect_error(bomb, "30000x30000 pixels, a side above the limit of 16384");
    image_limits wide;
    wide.max_side = 65535;
    expect_error(bomb, "more than the limit of 50000000", wide);
    // Microseconds in fact; decoding 900 million pixels would take seconds and gigabytes.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  }
}

TEST(hostile_image, more_bytes_than_max_bytes_are_refused_before_decoding) {
  image_limits limits;
  limits.max_bytes = 100;
  expect_error(std::vector<uint8_t>(101, 0xff), "101 bytes, more than the limit of 100", limits);
}

TEST(hostile_image, a_corrupt_png_stream_is_an_error) {
  ASSERT_EQ(pil().error, "");
  std::vector<uint8_t> png = file("png_rgb.png");
  for (std::size_t i = 0; i + 8 < png.size(); ++i) {
    if (std::memcmp(png.data() + i, "IDAT", 4) == 0) {
      for (std::size_t j = i + 6; j < i + 40; ++j) png[j] ^= 0x5a;  // past the zlib header
      break;
    }
  }
  expect_error(png, "PNG: truncated or corrupt data");
}

TEST(hostile_image, random_corruption_never_crashes) {
  // Bytes flipped at random through every PIL-written file: each decode either fails with a
  // reason or gives an image within the limits (PIL too decodes some corrupt JPEG data).
  ASSERT_EQ(pil().error, "");
  std::mt19937 random(1234);
  for (const auto& c : pil().manifest["decode"]) {
    const std::vector<uint8_t> whole = file(c["file"]);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<uint8_t> bytes = whole;
      const int flips = 1 + trial % 4;
      for (int i = 0; i < flips; ++i) bytes[random() % bytes.size()] ^= uint8_t(1 + random() % 255);
      const decoded_image got = decode_image(bytes);
      if (!got.ok()) {
        EXPECT_FALSE(got.error.empty());
        continue;
      }
      EXPECT_EQ(got.image.pixels.size(), std::size_t(got.image.width) * got.image.height * 3);
      EXPECT_EQ(check_dimensions(got.image.width, got.image.height, {}), "");
    }
  }
}

}  // namespace
}  // namespace actorllm::media
