#include "media/image_decode.hpp"

#include <algorithm>

#include "media/image_decoders.hpp"

namespace actorllm::media {

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic, std::size_t at = 0) {
  if (bytes.size() < at + magic.size()) return false;
  return std::equal(magic.begin(), magic.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at),
                    [](char m, uint8_t b) { return static_cast<uint8_t>(m) == b; });
}

}  // namespace

image_format sniff_image_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return image_format::png;
  if (starts_with(bytes, "\xff\xd8\xff")) return image_format::jpeg;
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return image_format::webp;
  if (starts_with(bytes, "GIF87a") || starts_with(bytes, "GIF89a")) return image_format::gif;
  return image_format::unknown;
}

std::string_view format_name(image_format format) {
  switch (format) {
    case image_format::png:
      return "PNG";
    case image_format::jpeg:
      return "JPEG";
    case image_format::webp:
      return "WebP";
    case image_format::gif:
      return "GIF";
    case image_format::unknown:
      break;
  }
  return "unknown";
}

std::string check_dimensions(int64_t width, int64_t height, const image_limits& limits) {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  if (width <= 0 || height <= 0) return "image is " + size + " pixels: it has no pixels";
  if (width > limits.max_side || height > limits.max_side) {
    return "image is " + size + " pixels, a side above the limit of " +
           std::to_string(limits.max_side);
  }
  if (width * height > limits.max_pixels) {
    return "image is " + size + " pixels, more than the limit of " +
           std::to_string(limits.max_pixels);
  }
  return {};
}

decoded_image decode_image(std::span<const uint8_t> bytes, const image_limits& limits) {
  if (bytes.size() > limits.max_bytes) {
    return {{},
            "image is " + std::to_string(bytes.size()) + " bytes, more than the limit of " +
                std::to_string(limits.max_bytes)};
  }
  const image_format format = sniff_image_format(bytes);
  decoded_image out;
  switch (format) {
    case image_format::png:
      out = detail::decode_png(bytes, limits);
      break;
    case image_format::jpeg:
      out = detail::decode_jpeg(bytes, limits);
      break;
    case image_format::webp:
      out = detail::decode_webp(bytes, limits);
      break;
    case image_format::gif:
      out = detail::decode_gif(bytes, limits);
      break;
    case image_format::unknown:
      return {{}, "not a PNG, JPEG, WebP or GIF image"};
  }
  if (!out.ok()) {
    out.image = {};
    out.error = std::string(format_name(format)) + ": " + out.error;
  }
  return out;
}

}  // namespace actorllm::media
