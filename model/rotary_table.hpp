#pragma once
/// RoPE's precomputed angles for every position the model can see, with config.json's
/// rope_scaling applied.
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"

namespace actorllm {

/// Rows of head_dim floats: head_dim/2 cosines then head_dim/2 sines per position.
struct rotary_table {
  std::vector<float> cos_sin;
  /// LongRoPE: rows [0, long_offset) use the short factors, the rows after them the long ones;
  /// a sequence longer than the original context reads position + long_offset (as vLLM
  /// does). 0: one set of rows.
  int64_t long_offset = 0;
};

/// The inverse frequency of each rotary pair under `scaling` (none, linear, dynamic, yarn,
/// llama3; LongRoPE's two sets come from longrope_inverse_frequencies).
std::vector<double> inverse_frequencies(double theta, int64_t head_dim,
                                        const rope_scaling_config& scaling,
                                        int64_t max_position_embeddings);

/// The factor cos and sin are multiplied by (YaRN's mscale, LongRoPE's attention factor; 1
/// otherwise).
double rotary_magnitude(const rope_scaling_config& scaling);

/// The table of the full-attention layers: rope_theta with rope_scaling, max_position rows
/// (twice that, less the original context, with LongRoPE).
rotary_table build_rotary_table(const model_config_hf& config, int64_t max_position);

/// The table of the windowed layers where they rotate by a base of their own (Gemma 3's
/// rope_local_base_freq, unscaled); empty when they share the global one.
rotary_table build_local_rotary_table(const model_config_hf& config, int64_t max_position);

}  // namespace actorllm
