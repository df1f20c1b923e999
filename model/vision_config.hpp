#pragma once
/// A vision-language model's image side (config.json of LlavaForConditionalGeneration and,
/// to come, the other families that wrap a decoder in a vision tower): the tower's shape, which
/// of its layers feed the language model, the projector, and how many prompt tokens an image
/// fills. The decoder's own fields come from the wrapper's `text_config`.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace actorllm {

enum class vision_activation : uint8_t { quick_gelu, gelu, gelu_tanh, silu };

/// How the tower's last rows become the decoder's: LLaVA's two-layer MLP, Gemma 3's average
/// pooling to pooled_tokens rows, (1 + w) RMSNorm and one projection, or Qwen2.5-VL's merger
/// (RMSNorm, each merge_size x merge_size block of rows concatenated, a two-layer MLP).
enum class vision_projector : uint8_t { mlp, pooled, merger };

struct vision_config {
  /// The encoder's family: clip (LLaVA), siglip (Gemma 3), qwen2_5_vl.
  std::string tower = "clip";
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

  /// Qwen2.5-VL: each image at its own resolution (sides multiples of patch_size *
  /// merge_size), patches of temporal_patch_size frames (a still image repeated), attention
  /// within windows of window_size pixels a side except in full_attention_layers, 2-D rotary
  /// over the patches' rows and columns; each merge_size x merge_size block of patches becomes
  /// one token. The decoder places the tokens with M-RoPE (model_config_hf::mrope_section).
  int64_t merge_size = 1;
  int64_t temporal_patch_size = 1;
  int64_t window_size = 0;
  std::vector<int64_t> full_attention_layers;
  int32_t vision_start_token_id = -1;

  bool dynamic_resolution() const { return tower == "qwen2_5_vl"; }
  int64_t head_dim() const { return hidden_size / num_heads; }
  /// Qwen2.5-VL's input row: one patch's values over (channel, frame, y, x).
  int64_t patch_dim() const { return num_channels * temporal_patch_size * patch_size * patch_size; }
  /// Prompt tokens of an image of height x width pixels at dynamic resolution (Qwen2.5-VL).
  int64_t tokens_for(int64_t height, int64_t width) const {
    return (height / patch_size) * (width / patch_size) / (merge_size * merge_size);
  }
  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t num_patches() const { return patches_per_side() * patches_per_side(); }
  /// Rows of the tower's sequence: the patches, and the CLS token where there is one.
  int64_t num_positions() const { return num_patches() + (class_token ? 1 : 0); }
  /// Prompt tokens (and embeddings) one image fills at a fixed resolution; 0 at a dynamic one
  /// (tokens_for).
  int64_t tokens_per_image() const {
    if (dynamic_resolution()) return 0;
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
