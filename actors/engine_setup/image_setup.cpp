#include "actors/engine_setup/image_setup.hpp"

#include <stdexcept>
#include <string>

#include "media/media_fetch.hpp"

namespace actorllm {

namespace {

/// Qwen2.5-VL: Qwen2_5_VLProcessor repeats "<|image_pad|>" once per merged patch, the chat
/// template having wrapped it in <|vision_start|> and <|vision_end|>; the image's size comes
/// from Qwen2VLImageProcessor's smart_resize, whose patch grid must be the tower's.
void set_dynamic_resolution(const vision_config& vision, const std::filesystem::path& model_dir,
                            image_spec& spec) {
  spec.placeholder = spec.image_token;
  spec.token_side = static_cast<int32_t>(vision.patch_size * vision.merge_size);
  const auto path = (model_dir / "preprocessor_config.json").string();
  const auto kind = media::image_processor_kind::qwen2_vl;
  if (auto read = media::read_image_processor_config(model_dir, kind)) {
    if (!read->ok()) throw std::runtime_error(path + ": " + read->error);
    spec.processor = read->config;
  } else {
    spec.processor = media::default_image_processor_config(kind);
  }
  const media::image_processor_config& p = spec.processor;
  if (p.kind != kind || !p.do_resize || p.patch_size != vision.patch_size ||
      p.merge_size != vision.merge_size || p.temporal_patch_size != vision.temporal_patch_size)
    throw std::runtime_error(path + ": the processor's patches (" + std::to_string(p.patch_size) +
                             " pixels, merged " + std::to_string(p.merge_size) + " a side, " +
                             std::to_string(p.temporal_patch_size) +
                             " frames) are not the vision tower's");
}

}  // namespace

std::shared_ptr<const image_pipeline> make_image_pipeline(const vision_config& vision,
                                                          const std::filesystem::path& model_dir,
                                                          const media_policy& policy,
                                                          const tokenizer& tok) {
  image_spec spec;
  spec.image_token_id = vision.image_token_id;
  if (vision.image_token_id < 0 || static_cast<size_t>(vision.image_token_id) >= tok.vocab_size())
    throw std::runtime_error("config.json: the image token " +
                             std::to_string(vision.image_token_id) +
                             " is not in the tokenizer's vocabulary");
  spec.image_token = tok.id_to_piece(vision.image_token_id);
  spec.limits.max_bytes = policy.max_bytes;
  media_fetcher fetch = [policy](std::string_view url) { return media::fetch_media(url, policy); };
  if (vision.dynamic_resolution()) {
    set_dynamic_resolution(vision, model_dir, spec);
    return std::make_shared<const image_pipeline>(std::move(spec), std::move(fetch));
  }
  const bool gemma3 = vision.projector == vision_projector::pooled;
  if (gemma3) {
    // Gemma3Processor: each "<start_of_image>" becomes "\n\n<start_of_image>", the image's soft
    // tokens, "<end_of_image>\n\n".
    for (int32_t id : {vision.boi_token_id, vision.eoi_token_id})
      if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size())
        throw std::runtime_error("config.json: the image token " + std::to_string(id) +
                                 " is not in the tokenizer's vocabulary");
    spec.placeholder = tok.id_to_piece(vision.boi_token_id);
    spec.before = "\n\n" + spec.placeholder;
    spec.after = tok.id_to_piece(vision.eoi_token_id) + "\n\n";
  } else {
    // LLaVA's processor repeats its placeholder once per position of the image.
    spec.placeholder = spec.image_token;
  }
  spec.tokens_per_image = static_cast<int32_t>(vision.tokens_per_image());
  spec.image_size = static_cast<int32_t>(vision.image_size);
  const auto path = (model_dir / "preprocessor_config.json").string();
  const auto kind =
      gemma3 ? media::image_processor_kind::siglip : media::image_processor_kind::clip;
  if (auto read = media::read_image_processor_config(model_dir, kind)) {
    if (!read->ok()) throw std::runtime_error(path + ": " + read->error);
    spec.processor = read->config;
  } else {
    // No file: the processor's steps at the tower's size (CLIP's shortest edge and crop,
    // SigLIP's fixed size).
    spec.processor = media::default_image_processor_config(kind);
    if (gemma3) {
      spec.processor.shortest_edge = 0;
      spec.processor.height = spec.processor.width = spec.image_size;
    } else {
      spec.processor.shortest_edge = spec.image_size;
      spec.processor.crop_height = spec.processor.crop_width = spec.image_size;
    }
  }
  const media::image_processor_config& p = spec.processor;
  const bool square =
      p.do_center_crop
          ? p.crop_height == spec.image_size && p.crop_width == spec.image_size
          : p.shortest_edge == 0 && p.height == spec.image_size && p.width == spec.image_size;
  if (p.kind != kind || !square)
    throw std::runtime_error(path + ": the processor does not give the " +
                             std::to_string(spec.image_size) + "x" +
                             std::to_string(spec.image_size) + " images the vision tower takes");
  return std::make_shared<const image_pipeline>(std::move(spec), std::move(fetch));
}

}  // namespace actorllm
