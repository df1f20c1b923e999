#pragma once
/// The per-format decoders behind decode_image (image_decode.hpp), each in its own file. Each
/// checks the header's size with check_dimensions before taking pixel memory and returns the
/// codec's complaint as an error; none lets a codec print, exit or leak.
#include <cstdint>
#include <span>

#include "media/image_decode.hpp"

namespace actorllm::media::detail {

decoded_image decode_png(std::span<const uint8_t> bytes, const image_limits& limits);
decoded_image decode_jpeg(std::span<const uint8_t> bytes, const image_limits& limits);
decoded_image decode_webp(std::span<const uint8_t> bytes, const image_limits& limits);
decoded_image decode_gif(std::span<const uint8_t> bytes, const image_limits& limits);

}  // namespace actorllm::media::detail
