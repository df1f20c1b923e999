#pragma once
/// The router's image side (a core, for a vision-language model): an image URL of a request to
/// the prompt_image the workers take (fetched, decoded within limits, preprocessed exactly as
/// the model's Hugging Face image processor does it, keyed by its pixels); a rendered prompt's
/// placeholders expanded as the model's HF processor expands them, in the text, before it is
/// tokenized (so that what surrounds an image tokenizes as it does there); and the images
/// placed at their tokens.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/prompt_image.hpp"
#include "media/image_decode.hpp"
#include "media/image_processor_config.hpp"
#include "media/media_fetch.hpp"

namespace actorllm {

/// Fetches a data:, file:// or http(s):// URL under the server's media policy (blocking;
/// media::fetch_media, or a test's stand-in).
using media_fetcher = std::function<media::fetched_media(std::string_view url)>;

/// What a model's images need: its placeholder, the positions an image fills, its processor.
/// The i-th `placeholder` of a rendered prompt becomes `before` + image i's num_tokens times
/// `image_token` + `after` (LLaVA: "<image>" repeated; Gemma 3: "\n\n<start_of_image>", the
/// soft tokens, "<end_of_image>\n\n").
struct image_spec {
  std::string placeholder;
  std::string before, after;
  std::string image_token;  ///< the text of image_token_id
  int32_t image_token_id = -1;
  int32_t tokens_per_image = 0;
  /// The tower's input: (channels, size, size) after preprocessing, else refused.
  int32_t image_size = 0;
  /// Dynamic resolution (Qwen2.5-VL), where image_size and tokens_per_image are 0: each token
  /// covers token_side x token_side pixels (patch_size * merge_size), the image's sides being
  /// multiples of it after preprocessing.
  int32_t token_side = 0;
  media::image_processor_config processor;
  media::image_limits limits;
};

/// One image loaded, or why not (a message naming the image, and its HTTP status).
struct loaded_image {
  prompt_image image;
  std::string error;
  int32_t status = 400;
  bool ok() const { return error.empty(); }
};

class image_pipeline {
 public:
  image_pipeline(image_spec spec, media_fetcher fetch)
      : spec_(std::move(spec)), fetch_(std::move(fetch)) {}

  const image_spec& spec() const { return spec_; }

  /// Fetches, decodes and preprocesses `url`, the prompt's image `index` (named in errors).
  /// The result's offset is left for expand(). Thread-safe.
  loaded_image load(std::string_view url, size_t index) const;

  /// The rendered prompt `text` with its i-th placeholder expanded for images[i]. An error
  /// (empty: done, into `expanded`) when the placeholders and the images differ in number.
  std::string expand(const std::string& text, const std::vector<prompt_image>& images,
                     std::string& expanded) const;
  /// Finds the i-th run of image tokens in the tokenized prompt, sets images[i].offset, and
  /// writes the images' key tokens there. An error (empty: done) where the runs are not the
  /// images' (an image token written by the client, a template that split a run).
  std::string place(std::vector<int32_t>& token_ids, std::vector<prompt_image>& images) const;

 private:
  image_spec spec_;
  media_fetcher fetch_;
};

/// A hash of an image's pixel values and shape: equal keys, equal tower inputs (up to 64-bit
/// collisions).
uint64_t pixels_key(const prompt_image& image);

}  // namespace actorllm
