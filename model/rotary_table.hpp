#pragma once
/// RoPE's precomputed angles for every position the model can see.
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"

namespace actorllm {

/// The rotary table (max_position, head_dim): head_dim/2 cosines then sines per position,
/// with llama3 or linear rope scaling applied to the inverse frequencies.
std::vector<float> build_rotary_table(const model_config_hf& config, int64_t max_position);

}  // namespace actorllm
