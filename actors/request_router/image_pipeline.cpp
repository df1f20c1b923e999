#include "actors/request_router/image_pipeline.hpp"

#include <algorithm>
#include <cstring>

#include "media/image_processor.hpp"

namespace actorllm {

namespace {

uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t pixels_key(const prompt_image& image) {
  uint64_t h = mix64(0x243f6a8885a308d3ULL ^ static_cast<uint64_t>(image.channels) << 40 ^
                     static_cast<uint64_t>(image.height) << 20 ^ static_cast<uint64_t>(image.width));
  const auto* bytes = reinterpret_cast<const uint8_t*>(image.pixels.data());
  const size_t n = image.pixels.size() * sizeof(float);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = mix64(h ^ word) + 0x9e3779b97f4a7c15ULL;
  }
  for (; i < n; ++i) h = mix64(h ^ bytes[i]);
  return mix64(h ^ n);
}

loaded_image image_pipeline::load(std::string_view url, size_t index) const {
  loaded_image out;
  const std::string which = "image " + std::to_string(index) + ": ";
  media::fetched_media media = fetch_(url);
  if (!media.ok()) return {{}, which + media.error, media.status};
  const media::decoded_image decoded = media::decode_image(media.bytes, spec_.limits);
  if (!decoded.ok()) return {{}, which + decoded.error, 400};
  media::preprocessed_image pre = media::preprocess(decoded.image, spec_.processor);
  if (!pre.ok()) return {{}, which + pre.error, 400};
  const media::pixel_tensor& t = pre.tensor;
  if (t.channels != 3 || t.height != spec_.image_size || t.width != spec_.image_size)
    return {{},
            which + "preprocessing gave " + std::to_string(t.height) + "x" +
                std::to_string(t.width) + " pixels; the vision tower takes " +
                std::to_string(spec_.image_size) + "x" + std::to_string(spec_.image_size) +
                " (check preprocessor_config.json)",
            500};
  prompt_image& image = out.image;
  image.channels = t.channels;
  image.height = t.height;
  image.width = t.width;
  image.pixels = std::move(pre.tensor.values);
  image.num_tokens = spec_.tokens_per_image;
  image.token_id = spec_.image_token_id;
  image.key = pixels_key(image);
  return out;
}

std::string image_pipeline::expand(std::vector<int32_t>& token_ids,
                                   std::vector<prompt_image>& images) const {
  const auto num_placeholders = static_cast<size_t>(
      std::count(token_ids.begin(), token_ids.end(), spec_.image_token_id));
  if (num_placeholders != images.size())
    return "the prompt has " + std::to_string(num_placeholders) + " image placeholder" +
           (num_placeholders == 1 ? "" : "s") + " for " + std::to_string(images.size()) +
           " image" + (images.size() == 1 ? "" : "s") +
           " (does the chat template place every image part?)";
  std::vector<int32_t> expanded;
  expanded.reserve(token_ids.size() + images.size() * static_cast<size_t>(spec_.tokens_per_image));
  size_t next = 0;
  for (int32_t id : token_ids) {
    if (id != spec_.image_token_id) {
      expanded.push_back(id);
      continue;
    }
    prompt_image& image = images[next++];
    image.offset = static_cast<int32_t>(expanded.size());
    expanded.insert(expanded.end(), static_cast<size_t>(image.num_tokens), id);
  }
  token_ids = std::move(expanded);
  key_image_positions(token_ids, images);
  return "";
}

}  // namespace actorllm
