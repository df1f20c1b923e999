#include "model/moe_layer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/ops.hpp"

namespace actorllm {

void route_token(const float* logits, int64_t num_experts, int64_t top_k, bool renormalise,
                 int32_t* experts, float* weights) {
  float top = *std::max_element(logits, logits + num_experts);
  std::vector<float> p(num_experts);
  float sum = 0.0f;
  for (int64_t e = 0; e < num_experts; ++e) sum += p[e] = std::exp(logits[e] - top);
  for (auto& v : p) v /= sum;
  std::vector<int32_t> order(num_experts);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                    [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  float chosen = 0.0f;
  for (int64_t k = 0; k < top_k; ++k) chosen += p[order[k]];
  for (int64_t k = 0; k < top_k; ++k) {
    experts[k] = order[k];
    weights[k] = renormalise ? p[order[k]] / chosen : p[order[k]];
  }
}

expert_router router_of(const model_config_hf& c) {
  // One pointer captured: the function holds it without an allocation.
  return [&c](const float* logits, int64_t n, int32_t* experts, float* weights) {
    const int64_t num_experts = c.moe.num_experts, k = c.moe.top_k;
    for (int64_t t = 0; t < n; ++t)
      route_token(logits + t * num_experts, num_experts, k, c.moe.norm_topk_prob, experts + t * k,
                  weights + t * k);
  };
}

void moe_forward(const float* x, int64_t n, const moe_weights& w, const model_config_hf& c,
                 moe_workspace& ws, float* y) {
  const int64_t dim = c.hidden_size, num_experts = c.moe.num_experts, k = c.moe.top_k;
  ws.router_logits.resize(std::max<size_t>(ws.router_logits.size(), n * num_experts));
  cpu::linear(x, w.router.data(), nullptr, n, dim, num_experts, ws.router_logits.data());
  ws.expert_of.resize(n * k);
  ws.weight_of.resize(n * k);
  router_of(c)(ws.router_logits.data(), n, ws.expert_of.data(), ws.weight_of.data());
  ws.experts.clear();
  for (const auto& e : w.experts) ws.experts.push_back({e.gate_up.data(), e.down.data(), e.width});
  const cpu::expert_mlp shared{w.shared.gate_up.data(), w.shared.down.data(), w.shared.width};
  cpu::run_experts(x, n, dim, ws.experts.data(), num_experts, ws.expert_of.data(),
                   ws.weight_of.data(), k, shared, w.shared_gate.data(),
                   c.activation == hidden_activation::gelu_tanh ? gate_activation::gelu_tanh
                                                                : gate_activation::silu,
                   ws.compute, y);
}

}  // namespace actorllm
