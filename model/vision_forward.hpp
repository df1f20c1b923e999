#pragma once
/// The forward pass of a vision tower and its projector, written once over the encoder ops
/// (kernels/encoder_ops.hpp): CLIP's ViT as LLaVA runs it (transformers' CLIPVisionTransformer
/// through vision_feature_layer, then LlavaMultiModalProjector), for a batch of images at once.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/encoder_ops.hpp"
#include "model/vision_config.hpp"

namespace actorllm {

/// One image as the tower takes it: (channels, height, width) float32, preprocessed.
struct image_pixels {
  const float* values = nullptr;
  int64_t channels = 0, height = 0, width = 0;
};

/// One tower layer's weights as a backend's handles.
struct vision_layer_refs {
  op_weight norm1 = nullptr, norm1_bias = nullptr;
  op_linear qkv, o;  ///< q, k and v rows fused, with their biases
  op_weight norm2 = nullptr, norm2_bias = nullptr;
  op_linear fc1, fc2;
};

/// The tower's and projector's weights as a backend's handles (null: absent).
/// Qwen2.5-VL's tower reads norm1 and norm2 as RMSNorm weights (no biases), fc1 as the gate and
/// up rows fused (gate first), fc2 as the down projection, projector1 and projector2 as the
/// merger's two layers after merger_norm.
struct vision_refs {
  op_linear patch;                ///< the patch convolution as (hidden, channels * patch * patch)
  op_weight positions = nullptr;  ///< (num_positions, hidden); CLIP's row 0 adds the class's
  op_weight pre_norm = nullptr, pre_norm_bias = nullptr;
  std::vector<vision_layer_refs> layers;  ///< those that run
  op_weight post_norm = nullptr, post_norm_bias = nullptr;
  op_linear projector1, projector2;  ///< LLaVA's two layers; Gemma 3's projection alone
  op_weight soft_norm = nullptr;     ///< Gemma 3's norm before its projection, (1 + w) folded
  op_weight merger_norm = nullptr;   ///< Qwen2.5-VL's ln_q
};

/// The tower's input rows of one image: the class token's row where there is one (zeros: its
/// embedding comes with position 0), then each patch in raster order, flattened (channel, y,
/// x) as the convolution's weight is. (num_positions, channels * patch * patch), appended to
/// `rows`.
/// Throws std::invalid_argument for pixels not of the tower's size.
void patch_rows(const vision_config& c, const image_pixels& image, std::vector<float>& rows);

/// Runs `images` through the tower and the projector: each image's embeddings,
/// (c.tokens_per_image() or, at dynamic resolution, c.tokens_for(height, width),
/// c.text_hidden_size) rows, images end to end, into `embeddings`.
void vision_forward(const vision_config& c, const vision_refs& weights,
                    std::span<const image_pixels> images, encoder_ops& ops,
                    std::vector<float>& embeddings);

}  // namespace actorllm
