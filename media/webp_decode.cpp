// WebP through libwebp's animation decoder, the API PIL's WebPImagePlugin reads every WebP
// with (still ones too): RGBA output with the default options (fancy upsampling, no dithering),
// the first frame of an animation composited on its zeroed canvas. A file without alpha is
// PIL's "RGB" (the decoder's RGBX); one with alpha is "RGBA" and goes onto white as vLLM does.
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <string>

#include "media/image_decoders.hpp"
#include "media/rgb_convert.hpp"

namespace actorllm::media::detail {

namespace {

struct webp_decoder_deleter {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};

}  // namespace

decoded_image decode_webp(std::span<const uint8_t> bytes, const image_limits& limits) {
  // The header alone: the canvas size, and whether PIL would call the image RGBA.
  WebPBitstreamFeatures features;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status != VP8_STATUS_OK) {
    return {{}, status == VP8_STATUS_NOT_ENOUGH_DATA ? "truncated data" : "corrupt header"};
  }
  if (std::string error = check_dimensions(features.width, features.height, limits);
      !error.empty()) {
    return {{}, error};
  }
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) return {{}, "libwebp version mismatch"};
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  const WebPData data{bytes.data(), bytes.size()};
  const std::unique_ptr<WebPAnimDecoder, webp_decoder_deleter> decoder(
      WebPAnimDecoderNew(&data, &options));
  WebPAnimInfo info;
  if (!decoder || !WebPAnimDecoderGetInfo(decoder.get(), &info)) {
    return {{}, "truncated or corrupt data"};
  }
  if (info.canvas_width != static_cast<uint32_t>(features.width) ||
      info.canvas_height != static_cast<uint32_t>(features.height)) {
    return {{}, "corrupt data (canvas size disagrees with the header)"};
  }
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(decoder.get(), &rgba, &timestamp)) {
    return {{}, "truncated or corrupt data"};
  }
  decoded_image out;
  rgb_image& image = out.image;
  image.width = features.width;
  image.height = features.height;
  const std::size_t pixels = static_cast<std::size_t>(image.width) * image.height;
  image.pixels.resize(pixels * 3);
  const std::span<const uint8_t> source(rgba, pixels * 4);
  if (features.has_alpha) {
    rgba_row_over_white(source, image.pixels);
  } else {
    for (std::size_t i = 0; i < pixels; ++i) {
      for (std::size_t c = 0; c < 3; ++c) image.pixels[3 * i + c] = source[4 * i + c];
    }
  }
  return out;
}

}  // namespace actorllm::media::detail
