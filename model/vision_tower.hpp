#pragma once
/// A vision-language model's tower and projector as loaded: float32 weights (the tower is a
/// small share of a LLaVA's parameters and runs once per image), their handles for the CPU's
/// encoder ops, and the encoding of a batch of images into the decoder's embedding rows.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/cpu_encoder_ops.hpp"
#include "kernels/cpu/cpu_forward_ops.hpp"
#include "model/safetensors.hpp"
#include "model/vision_config.hpp"
#include "model/vision_forward.hpp"

namespace actorllm {

struct vision_layer_weights {
  std::vector<float> norm1, norm1_bias;
  std::vector<float> qkv, qkv_bias;  ///< (3 hidden, hidden): q, k, v rows
  std::vector<float> o, o_bias;
  std::vector<float> norm2, norm2_bias;
  std::vector<float> fc1, fc1_bias;  ///< (intermediate, hidden)
  std::vector<float> fc2, fc2_bias;  ///< (hidden, intermediate)
};

struct vision_weights {
  std::vector<float> patch, patch_bias;  ///< (hidden, channels * patch * patch); bias: SigLIP
  std::vector<float> positions;  ///< (num_positions, hidden), CLIP's class embedding in row 0
  std::vector<float> pre_norm, pre_norm_bias;    ///< CLIP
  std::vector<vision_layer_weights> layers;      ///< through vision_feature_layer
  std::vector<float> post_norm, post_norm_bias;  ///< SigLIP
  /// LLaVA: (text hidden, hidden), then (text hidden, text hidden). Gemma 3: projector1 is the
  /// projection as rows (text hidden, hidden), after the soft norm's (1 + w).
  std::vector<float> projector1, projector1_bias;
  std::vector<float> projector2, projector2_bias;
  std::vector<float> soft_norm;
  /// Qwen2.5-VL: the merger's norm (its layers are projector1 and projector2); the blocks'
  /// norms have no biases, and fc1 is the gate's rows then the up's.
  std::vector<float> merger_norm;
  int64_t num_parameters() const;
};

/// Reads the tower (`vision_tower.vision_model.*`: CLIP's or SigLIP's) and the projector
/// (`multi_modal_projector.*`: LLaVA's MLP or Gemma 3's norm and projection), or Qwen2.5-VL's
/// (`visual.*`); throws
/// std::runtime_error naming a missing tensor or a wrong shape.
vision_weights load_vision_weights(const tensor_store& store, const vision_config& c);

class vision_tower {
 public:
  vision_tower(const tensor_store& store, const vision_config& config);
  vision_tower(const vision_tower&) = delete;
  vision_tower& operator=(const vision_tower&) = delete;

  const vision_config& config() const { return config_; }
  const vision_weights& weights() const { return weights_; }
  /// Each image's embeddings, (config().tokens_per_image(), text hidden) rows, images end to
  /// end, into `embeddings`, on the CPU. Read-only: concurrent calls with distinct scratch
  /// are safe.
  void encode(std::span<const image_pixels> images, cpu::encoder_scratch& scratch,
              std::vector<float>& embeddings) const;

 private:
  cpu::linear_weight& matrix(const std::vector<float>& rows, int64_t out, int64_t in);
  op_linear linear(const std::vector<float>& rows, const std::vector<float>& bias, int64_t out,
                   int64_t in);

  vision_config config_;
  vision_weights weights_;
  std::vector<cpu::linear_weight> matrices_;  ///< reserved up front: refs_ points into it
  vision_refs refs_;
};

}  // namespace actorllm
