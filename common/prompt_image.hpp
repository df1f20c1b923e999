#pragma once
/// One image of a prompt on its way from the router to the workers: the pixels its model's
/// vision tower takes, and the prompt positions its embeddings fill.
///
/// The prompt the router and the scheduler hold has, at an image's positions, key tokens
/// (image_key_token) instead of the model's placeholder: negative ids made from the image's
/// key and the position, so that the prefix cache's block hashes (and the router's copy of
/// them) tell two prompts apart that differ only in their images. The workers put the
/// placeholder back before anything indexes the vocabulary with them.
#include <cstdint>
#include <vector>

namespace actorllm {

struct prompt_image {
  uint64_t key = 0;        ///< a hash of the pixels: the encoder cache's key
  int32_t offset = 0;      ///< the first prompt position it fills
  int32_t num_tokens = 0;  ///< positions it fills (its embedding rows)
  int32_t token_id = -1;   ///< the model's placeholder token at those positions
  int32_t channels = 0, height = 0, width = 0;
  std::vector<float> pixels;  ///< (channels, height, width), preprocessed

  int32_t end() const { return offset + num_tokens; }
};

/// The key token of position `i` of an image with `key`: negative, never a vocabulary id.
inline int32_t image_key_token(uint64_t key, int32_t i) {
  uint64_t h = key + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(i) + 1);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return -1 - static_cast<int32_t>(h & 0x3fffffff);
}

/// Writes the key tokens of every image into `token_ids` at its positions.
inline void key_image_positions(std::vector<int32_t>& token_ids,
                                const std::vector<prompt_image>& images) {
  for (const prompt_image& image : images)
    for (int32_t i = 0; i < image.num_tokens; ++i)
      token_ids.at(static_cast<size_t>(image.offset + i)) = image_key_token(image.key, i);
}

}  // namespace actorllm
