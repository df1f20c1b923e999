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

/// How the tower's last rows become the decoder's: LLaVA's two-layer MLP, or Gemma 3's average
/// pooling to pooled_tokens rows, (1 + w) RMSNorm and one projection.
enum class vision_projector : uint8_t { mlp, pooled };

struct vision_config {
  std::string tower = "clip";  ///< the encoder's family: clip (LLaVA), siglip (Gemma 3)
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;  ///< the tower's layers that run (through vision_feature_layer)
  int64_t num_heads = 0;
  int64_t image_size = 0;  ///< pixels per side of the tower's input
  int64_t patch_size = 0;
  int64_t num_channels = 3;
  double layer_norm_eps = 1e-5;
  vision_activation activation = vision_activation::quick_gelu;
  // What sets SigLIP apart from CLIP (each default is CLIP's).
  bool class_token = true;  ///< a CLS row before the patches
  bool pre_norm = true;     ///< a layer norm before the first layer (CLIP's pre_layrnorm)
  bool post_norm = false;   ///< a layer norm after the last (SigLIP's post_layernorm)
  bool patch_bias = false;  ///< the patch convolution's bias
  /// The image's features: the tower's CLS row kept too ("full"), or only the patches'
  /// ("default").
  bool keep_class_token = false;
  vision_projector projector = vision_projector::mlp;
  /// mlp: its two layers, text_hidden x hidden, then text_hidden x text_hidden.
  vision_activation projector_activation = vision_activation::gelu;
  /// pooled: the rows an image pools to (a square), and its norm's epsilon.
  int64_t pooled_tokens = 0;
  double projector_norm_eps = 1e-6;
  int64_t text_hidden_size = 0;
  /// The token at an image's positions, tokens_per_image() of them. LLaVA's prompt holds it
  /// once per image; Gemma 3's holds boi_token_id, which its processor expands to "\n\n",
  /// boi, the image's tokens, eoi, "\n\n".
  int32_t image_token_id = -1;
  int32_t boi_token_id = -1, eoi_token_id = -1;
  /// Gemma 3: the decoder attends both ways among one image's tokens.
  bool bidirectional_image_attention = false;

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t num_patches() const { return patches_per_side() * patches_per_side(); }
  /// Rows of the tower's sequence: the patches, and the CLS token where there is one.
  int64_t num_positions() const { return num_patches() + (class_token ? 1 : 0); }
  /// Prompt tokens (and embeddings) one image fills.
  int64_t tokens_per_image() const {
    if (projector == vision_projector::pooled) return pooled_tokens;
    return num_patches() + (class_token && keep_class_token ? 1 : 0);
  }
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
