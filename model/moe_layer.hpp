#pragma once
/// The mixture-of-experts feed-forward on the CPU (Mixtral, Qwen2-MoE, Qwen3-MoE): each token
/// is routed to its top-k experts by a softmax over the router's logits; the tokens of each
/// expert are gathered into one batch, so that an expert's weights are read once per step
/// (a grouped GEMM), and the results are added back weighted.
#include <cstdint>
#include <vector>

#include "model/llama_weights.hpp"
#include "model/model_config.hpp"

namespace actorllm {

/// Scratch of one MoE forward, grown to the largest step and reused.
struct moe_workspace {
  std::vector<float> router_logits, rows, gate_up, act, out;
  std::vector<float> result;                 // the layer's output, kept apart from its input
  std::vector<int32_t> expert_of, token_of;  // (n * top_k): the choices, then grouped
  std::vector<float> weight_of;
};

/// The top-k experts of one token and their routing weights: softmax over `logits`
/// (num_experts), the k largest (ties: the lower index), renormalised to sum to 1 when
/// `renormalise`. Exposed for tests.
void route_token(const float* logits, int64_t num_experts, int64_t top_k, bool renormalise,
                 int32_t* experts, float* weights);

/// y(n, dim) = the layer's experts (and shared expert) applied to x(n, dim); y must not
/// overlap x.
void moe_forward(const float* x, int64_t n, const moe_weights& w, const model_config_hf& config,
                 moe_workspace& ws, float* y);

}  // namespace actorllm
