#include "model/moe_layer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/ops.hpp"

namespace actorllm {

namespace {

void activate(const model_config_hf& c, const float* gate_up, int64_t n, int64_t width,
              float* out) {
  if (c.activation == hidden_activation::gelu_tanh)
    cpu::gelu_tanh_and_mul(gate_up, n, width, out);
  else
    cpu::silu_and_mul(gate_up, n, width, out);
}

/// out(n, dim) = down(act(gate_up x)) for one expert over n gathered rows.
void run_expert(const float* rows, int64_t n, const mlp_weights& e, const model_config_hf& c,
                moe_workspace& ws, float* out) {
  const int64_t dim = c.hidden_size;
  ws.gate_up.resize(std::max<size_t>(ws.gate_up.size(), n * 2 * e.width));
  ws.act.resize(std::max<size_t>(ws.act.size(), n * e.width));
  cpu::linear(rows, e.gate_up.data(), nullptr, n, dim, 2 * e.width, ws.gate_up.data());
  activate(c, ws.gate_up.data(), n, e.width, ws.act.data());
  cpu::linear(ws.act.data(), e.down.data(), nullptr, n, e.width, dim, out);
}

}  // namespace

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

void moe_forward(const float* x, int64_t n, const moe_weights& w, const model_config_hf& c,
                 moe_workspace& ws, float* y) {
  const int64_t dim = c.hidden_size, num_experts = c.moe.num_experts, k = c.moe.top_k;
  ws.router_logits.resize(std::max<size_t>(ws.router_logits.size(), n * num_experts));
  cpu::linear(x, w.router.data(), nullptr, n, dim, num_experts, ws.router_logits.data());
  ws.expert_of.resize(n * k);
  ws.weight_of.resize(n * k);
  for (int64_t t = 0; t < n; ++t)
    route_token(ws.router_logits.data() + t * num_experts, num_experts, k, c.moe.norm_topk_prob,
                ws.expert_of.data() + t * k, ws.weight_of.data() + t * k);

  // Group the (token, expert) choices by expert: one batch per expert.
  std::vector<int32_t> order(n * k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return ws.expert_of[a] < ws.expert_of[b]; });
  std::fill(y, y + n * dim, 0.0f);
  ws.rows.resize(std::max<size_t>(ws.rows.size(), n * k * dim));
  ws.out.resize(std::max<size_t>(ws.out.size(), n * k * dim));
  for (size_t begin = 0; begin < order.size();) {
    const int32_t e = ws.expert_of[order[begin]];
    size_t end = begin;
    while (end < order.size() && ws.expert_of[order[end]] == e) ++end;
    const auto m = static_cast<int64_t>(end - begin);
    for (int64_t r = 0; r < m; ++r) {
      const int64_t t = order[begin + r] / k;
      std::copy(x + t * dim, x + (t + 1) * dim, ws.rows.data() + r * dim);
    }
    run_expert(ws.rows.data(), m, w.experts[e], c, ws, ws.out.data());
    for (int64_t r = 0; r < m; ++r) {
      const int32_t choice = order[begin + r];
      const float weight = ws.weight_of[choice];
      float* dst = y + (choice / k) * dim;
      const float* src = ws.out.data() + r * dim;
      for (int64_t d = 0; d < dim; ++d) dst[d] += weight * src[d];
    }
    begin = end;
  }

  if (w.shared.width > 0) {
    // Qwen2-MoE: every token also goes through the shared expert, scaled by its gate.
    run_expert(x, n, w.shared, c, ws, ws.out.data());
    for (int64_t t = 0; t < n; ++t) {
      float gate = 0.0f;
      for (int64_t d = 0; d < dim; ++d) gate += x[t * dim + d] * w.shared_gate[d];
      const float scale = 1.0f / (1.0f + std::exp(-gate));
      for (int64_t d = 0; d < dim; ++d) y[t * dim + d] += scale * ws.out[t * dim + d];
    }
  }
}

}  // namespace actorllm
