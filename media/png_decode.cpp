// PNG through libpng, to the pixels PIL's own PNG reader gives (PngImagePlugin's _MODES) and
// then vLLM's RGB conversion: 16-bit gray is PIL's mode "I", whose RGB conversion clips at 255;
// 16-bit colour keeps the high byte; 16-bit gray+alpha becomes RGBA (PIL's "LA;16B"), 8-bit
// gray+alpha stays LA and loses its alpha; tRNS and gamma chunks change no pixel.
#include <png.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "media/image_decoders.hpp"
#include "media/rgb_convert.hpp"

namespace actorllm::media::detail {

namespace {

// What libpng needs alive across a longjmp: nothing here is a local of the function that calls
// setjmp, so no destructor is skipped when libpng jumps back.
struct png_session {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::span<const uint8_t> bytes;
  std::size_t offset = 0;
  char error[256] = {};
  std::vector<uint8_t> raw;             // one row, or the whole image when interlaced
  std::vector<png_bytep> row_pointers;  // into raw, when interlaced

  ~png_session() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

void png_error_to_session(png_structp png, png_const_charp message) {
  auto* s = static_cast<png_session*>(png_get_error_ptr(png));
  std::snprintf(s->error, sizeof s->error, "%s", message);
  png_longjmp(png, 1);
}

void png_warning_ignored(png_structp, png_const_charp) {}

void png_read_from_span(png_structp png, png_bytep out, png_size_t length) {
  auto* s = static_cast<png_session*>(png_get_io_ptr(png));
  if (length > s->bytes.size() - s->offset) png_error(png, "truncated data");
  std::memcpy(out, s->bytes.data() + s->offset, length);
  s->offset += length;
}

struct png_layout {
  int color_type = 0;
  int bit_depth = 0;  // after expanding 1, 2 and 4 bits to 8
  rgb_palette palette{};
};

uint8_t high_byte(const uint8_t* sample) {
  return sample[0];
}

// One row as libpng hands it over (big-endian 16-bit samples) to (width, 3) RGB.
void png_row_to_rgb(const png_layout& layout, const uint8_t* row, std::span<uint8_t> rgb) {
  const std::size_t width = rgb.size() / 3;
  const bool wide = layout.bit_depth == 16;
  switch (layout.color_type) {
    case PNG_COLOR_TYPE_GRAY:
      for (std::size_t x = 0; x < width; ++x) {
        const int v = wide ? (row[2 * x] << 8 | row[2 * x + 1]) : row[x];
        rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = static_cast<uint8_t>(std::min(v, 255));
      }
      return;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      for (std::size_t x = 0; x < width; ++x) {
        const uint8_t* p = row + (wide ? 4 : 2) * x;
        const uint8_t v = wide ? over_white(high_byte(p), high_byte(p + 2)) : p[0];
        rgb[3 * x] = rgb[3 * x + 1] = rgb[3 * x + 2] = v;
      }
      return;
    case PNG_COLOR_TYPE_RGB:
      for (std::size_t i = 0; i < 3 * width; ++i) rgb[i] = wide ? high_byte(row + 2 * i) : row[i];
      return;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      for (std::size_t x = 0; x < width; ++x) {
        const uint8_t* p = row + (wide ? 8 : 4) * x;
        const std::size_t step = wide ? 2 : 1;
        const uint8_t a = p[3 * step];
        for (std::size_t c = 0; c < 3; ++c) rgb[3 * x + c] = over_white(p[c * step], a);
      }
      return;
    case PNG_COLOR_TYPE_PALETTE:
      indexed_row_to_rgb({row, width}, layout.palette, rgb);
      return;
  }
}

// The two functions below call setjmp; libpng may longjmp back into them from any png_* call,
// so they hold no local with a destructor (what they fill lives in png_session or the caller).

// The header, up to the first image data; false with s.error set on failure.
bool read_png_header(png_session& s) {
  if (setjmp(png_jmpbuf(s.png))) return false;
  png_set_read_fn(s.png, &s, png_read_from_span);
  // libpng's own size limit would answer first with a vaguer message; ours is check_dimensions.
  png_set_user_limits(s.png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_read_info(s.png, s.info);
  return true;
}

// The pixels, into `image` (already sized); false with s.error set on failure.
bool read_png_rows(png_session& s, const png_layout& layout, rgb_image& image) {
  if (setjmp(png_jmpbuf(s.png))) return false;
  if (png_get_bit_depth(s.png, s.info) < 8) {
    // PIL's "1", "L;2" and "L;4" scale gray to 0..255 as this does; indices stay indices.
    if (layout.color_type == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(s.png);
    if (layout.color_type == PNG_COLOR_TYPE_PALETTE) png_set_packing(s.png);
  }
  const int passes = png_set_interlace_handling(s.png);
  png_read_update_info(s.png, s.info);
  const std::size_t row_bytes = png_get_rowbytes(s.png, s.info);
  const auto height = static_cast<std::size_t>(image.height);
  const std::size_t rgb_row = static_cast<std::size_t>(image.width) * 3;
  auto rgb_of = [&](std::size_t y) {
    return std::span<uint8_t>(image.pixels.data() + y * rgb_row, rgb_row);
  };
  if (passes > 1) {
    s.raw.resize(row_bytes * height);
    s.row_pointers.resize(height);
    for (std::size_t y = 0; y < height; ++y) s.row_pointers[y] = s.raw.data() + y * row_bytes;
    png_read_image(s.png, s.row_pointers.data());
    for (std::size_t y = 0; y < height; ++y) png_row_to_rgb(layout, s.row_pointers[y], rgb_of(y));
  } else {
    s.raw.resize(row_bytes);
    for (std::size_t y = 0; y < height; ++y) {
      png_read_row(s.png, s.raw.data(), nullptr);
      png_row_to_rgb(layout, s.raw.data(), rgb_of(y));
    }
  }
  // Chunks after the image data are not read: PIL does not need them to give the pixels.
  return true;
}

png_layout layout_of(png_session& s) {
  png_layout layout;
  layout.color_type = png_get_color_type(s.png, s.info);
  layout.bit_depth = std::max<int>(png_get_bit_depth(s.png, s.info), 8);
  if (layout.color_type == PNG_COLOR_TYPE_PALETTE) {
    png_colorp colours = nullptr;
    int count = 0;
    if (png_get_PLTE(s.png, s.info, &colours, &count) != PNG_INFO_PLTE) count = 0;
    std::vector<uint8_t> triplets;
    for (int i = 0; i < count; ++i) {
      triplets.insert(triplets.end(), {colours[i].red, colours[i].green, colours[i].blue});
    }
    layout.palette = make_palette(triplets);
  }
  return layout;
}

}  // namespace

decoded_image decode_png(std::span<const uint8_t> bytes, const image_limits& limits) {
  png_session s;
  s.bytes = bytes;
  s.png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_error_to_session, png_warning_ignored);
  if (s.png) s.info = png_create_info_struct(s.png);
  if (!s.png || !s.info) return {{}, "out of memory"};
  auto corrupt = [&] {
    return decoded_image{{}, std::string("truncated or corrupt data (") + s.error + ")"};
  };
  if (!read_png_header(s)) return corrupt();
  const png_uint_32 width = png_get_image_width(s.png, s.info);
  const png_uint_32 height = png_get_image_height(s.png, s.info);
  if (std::string error = check_dimensions(width, height, limits); !error.empty()) {
    return {{}, error};
  }
  decoded_image out;
  out.image.width = static_cast<int32_t>(width);
  out.image.height = static_cast<int32_t>(height);
  out.image.pixels.resize(std::size_t{width} * height * 3);
  if (!read_png_rows(s, layout_of(s), out.image)) return corrupt();
  return out;
}

}  // namespace actorllm::media::detail
