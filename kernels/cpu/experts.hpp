#pragma once
/// A mixture of experts' compute on the CPU, given the routing: the (token, expert) choices
/// are grouped by expert, so that each expert's weights are read once per step (a grouped
/// GEMM), and each result is added back to its token scaled by its routing weight; a shared
/// expert (Qwen2-MoE) runs over every token, scaled by sigmoid(x . gate). Which experts a token
/// takes is the model's rule (model/moe_layer.cpp routes); this file only computes.
#include <cstdint>
#include <vector>

#include "kernels/forward_ops.hpp"

namespace actorllm::cpu {

/// One expert's MLP in float32 rows: gate_up (2 * width, dim), gate rows then up rows, and
/// down (dim, width).
struct expert_mlp {
  const float* gate_up = nullptr;
  const float* down = nullptr;
  int64_t width = 0;
};

/// Scratch of one experts pass, grown to the largest step and reused.
struct experts_scratch {
  std::vector<float> rows, gate_up, act, out;
  std::vector<int32_t> order;
};

/// y(n, dim) = sum over each token's k choices of weight * expert(x row), plus the shared
/// expert (width 0: none) scaled by sigmoid(x . shared_gate). expert_of and weight_of are
/// (n, k); every expert id must be below num_experts. y must not overlap x.
void run_experts(const float* x, int64_t n, int64_t dim, const expert_mlp* experts,
                 int64_t num_experts, const int32_t* expert_of, const float* weight_of, int64_t k,
                 const expert_mlp& shared, const float* shared_gate, gate_activation activation,
                 experts_scratch& scratch, float* y);

}  // namespace actorllm::cpu
