#pragma once
/// A vision-language model's image side (config.json of LlavaForConditionalGeneration and,
/// to come, the other families that wrap a decoder in a vision tower): the tower's shape, which
/// of its layers feed the language model, the projector, and how many prompt tokens an image
/// fills. The decoder's own fields come from the wrapper's `text_config`.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace actorllm {

enum class vision_activation : uint8_t { quick_gelu, gelu, gelu_tanh };

struct vision_config {
  std::string tower = "clip";  ///< the encoder's family (CLIP's ViT)
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;  ///< the tower's layers that run (through vision_feature_layer)
  int64_t num_heads = 0;
  int64_t image_size = 0;  ///< pixels per side of the tower's input
  int64_t patch_size = 0;
  int64_t num_channels = 3;
  double layer_norm_eps = 1e-5;
  vision_activation activation = vision_activation::quick_gelu;
  /// The image's features: the tower's CLS row kept too ("full"), or only the patches'
  /// ("default").
  bool keep_class_token = false;
  /// The projector's two layers: text_hidden x hidden, then text_hidden x text_hidden.
  vision_activation projector_activation = vision_activation::gelu;
  int64_t text_hidden_size = 0;
  /// The placeholder token a prompt holds once per image; expanded to tokens_per_image().
  int32_t image_token_id = -1;

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t num_patches() const { return (image_size / patch_size) * (image_size / patch_size); }
  /// Rows of the tower's sequence: the patches and the CLS token.
  int64_t num_positions() const { return num_patches() + 1; }
  /// Prompt tokens (and embeddings) one image fills.
  int64_t tokens_per_image() const { return num_patches() + (keep_class_token ? 1 : 0); }
};

/// A multimodal config.json read apart: the decoder's config (its `text_config`, with the
/// architecture of its model_type and the defaults transformers gives a missing key) to be
/// read as any decoder's, and the image side.
struct multimodal_config_parts {
  nlohmann::json text;
  vision_config vision;
};

/// Whether `architecture` wraps a decoder in a vision tower.
bool is_multimodal_architecture(const std::string& architecture);

/// Splits a multimodal config.json (`j`, read from `path`). Throws std::runtime_error naming
/// the file and the field that is missing, malformed or not supported.
multimodal_config_parts split_multimodal_config(const nlohmann::json& j,
                                                const std::filesystem::path& path);

}  // namespace actorllm
