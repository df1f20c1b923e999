#include "actors/request_router/image_pipeline.hpp"

#include <algorithm>
#include <span>

#include "media/image_processor.hpp"
#include "model/byte_hash.hpp"

namespace actorllm {

uint64_t pixels_key(const prompt_image& image) {
  const int32_t shape[3] = {image.channels, image.height, image.width};
  const uint64_t parts[2] = {hash_bytes(std::as_bytes(std::span<const int32_t>(shape))),
                             hash_bytes(std::as_bytes(std::span<const float>(image.pixels)))};
  return hash_bytes(std::as_bytes(std::span<const uint64_t>(parts)));
}

loaded_image image_pipeline::load(std::string_view url, size_t index) const {
  loaded_image out;
  const std::string which = "image " + std::to_string(index) + ": ";
  const media::fetched_media fetched = fetch_(url);
  if (!fetched.ok()) return {{}, which + fetched.error, fetched.status};
  const media::decoded_image decoded = media::decode_image(fetched.bytes, spec_.limits);
  if (!decoded.ok()) return {{}, which + decoded.error, 400};
  media::preprocessed_image pre = media::preprocess(decoded.image, spec_.processor);
  if (!pre.ok()) return {{}, which + pre.error, 400};
  const media::pixel_tensor& t = pre.tensor;
  prompt_image& image = out.image;
  if (spec_.token_side > 0) {
    const int32_t side = spec_.token_side;
    if (t.channels != 3 || t.height % side != 0 || t.width % side != 0)
      return {{},
              which + "preprocessing gave " + std::to_string(t.height) + "x" +
                  std::to_string(t.width) + " pixels, not multiples of the " +
                  std::to_string(side) + " pixels of a token (check preprocessor_config.json)",
              500};
    image.num_tokens = (t.height / side) * (t.width / side);
  } else if (t.channels != 3 || t.height != spec_.image_size || t.width != spec_.image_size) {
    return {{},
            which + "preprocessing gave " + std::to_string(t.height) + "x" +
                std::to_string(t.width) + " pixels; the vision tower takes " +
                std::to_string(spec_.image_size) + "x" + std::to_string(spec_.image_size) +
                " (check preprocessor_config.json)",
            500};
  } else {
    image.num_tokens = spec_.tokens_per_image;
  }
  image.channels = t.channels;
  image.height = t.height;
  image.width = t.width;
  image.pixels = std::move(pre.tensor.values);
  image.token_id = spec_.image_token_id;
  image.key = pixels_key(image);
  return out;
}

std::string image_pipeline::expand(const std::string& text, const std::vector<prompt_image>& images,
                                   std::string& expanded) const {
  if (spec_.placeholder.empty()) return "this model's image placeholder has no text";
  std::vector<size_t> at;
  for (size_t p = text.find(spec_.placeholder); p != std::string::npos;
       p = text.find(spec_.placeholder, p + spec_.placeholder.size()))
    at.push_back(p);
  if (at.size() != images.size())
    return "the prompt has " + std::to_string(at.size()) + " image placeholder" +
           (at.size() == 1 ? "" : "s") + " for " + std::to_string(images.size()) + " image" +
           (images.size() == 1 ? "" : "s") + " (does the chat template place every image part?)";
  expanded.clear();
  size_t from = 0;
  for (size_t i = 0; i < at.size(); ++i) {
    expanded.append(text, from, at[i] - from);
    expanded += spec_.before;
    for (int32_t t = 0; t < images[i].num_tokens; ++t) expanded += spec_.image_token;
    expanded += spec_.after;
    from = at[i] + spec_.placeholder.size();
  }
  expanded.append(text, from, std::string::npos);
  return "";
}

std::string image_pipeline::place(std::vector<int32_t>& token_ids,
                                  std::vector<prompt_image>& images) const {
  size_t next = 0;
  for (size_t p = 0; p < token_ids.size();) {
    if (token_ids[p] != spec_.image_token_id) {
      ++p;
      continue;
    }
    size_t end = p;
    while (end < token_ids.size() && token_ids[end] == spec_.image_token_id) ++end;
    // A run is one image's tokens, or several images' back to back.
    while (p < end) {
      if (next >= images.size() || p + static_cast<size_t>(images[next].num_tokens) > end)
        return "the prompt's image tokens do not match its images (image tokens in the text?)";
      images[next].offset = static_cast<int32_t>(p);
      p += static_cast<size_t>(images[next++].num_tokens);
    }
  }
  if (next != images.size()) return "the prompt lost an image's tokens";
  key_image_positions(token_ids, images);
  return "";
}

}  // namespace actorllm
