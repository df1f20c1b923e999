#pragma once
/// The mixture-of-experts feed-forward (Mixtral, Qwen2-MoE, Qwen3-MoE): each token is routed to
/// its top-k experts by a softmax over the router's logits (route_token: the model's rule, which
/// every backend's experts op calls); the experts' compute is the backend's
/// (kernels/cpu/experts.hpp on the CPU). moe_forward is the whole layer on the CPU's float32
/// weights, for benchmarks and tests.
#include <cstdint>
#include <vector>

#include "kernels/cpu/experts.hpp"
#include "kernels/forward_ops.hpp"
#include "model/llama_weights.hpp"
#include "model/model_config.hpp"

namespace actorllm {

/// Scratch of one MoE forward, grown to the largest step and reused.
struct moe_workspace {
  std::vector<float> router_logits;
  std::vector<float> result;       // the layer's output, kept apart from its input
  std::vector<int32_t> expert_of;  // (n * top_k): the choices
  std::vector<float> weight_of;
  std::vector<cpu::expert_mlp> experts;
  cpu::experts_scratch compute;
};

/// The top-k experts of one token and their routing weights: softmax over `logits`
/// (num_experts), the k largest (ties: the lower index), renormalised to sum to 1 when
/// `renormalise`. Exposed for tests.
void route_token(const float* logits, int64_t num_experts, int64_t top_k, bool renormalise,
                 int32_t* experts, float* weights);

/// The forward ops' router for `config`'s experts: route_token over each of n rows; valid while
/// `config` lives.
expert_router router_of(const model_config_hf& config);

/// y(n, dim) = the layer's experts (and shared expert) applied to x(n, dim); y must not
/// overlap x.
void moe_forward(const float* x, int64_t n, const moe_weights& w, const model_config_hf& config,
                 moe_workspace& ws, float* y);

}  // namespace actorllm
