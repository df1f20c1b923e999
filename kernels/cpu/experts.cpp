#include "kernels/cpu/experts.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

namespace {

/// out(n, dim) = down(act(gate_up rows)) for one expert over n gathered rows.
void run_expert(const float* rows, int64_t n, int64_t dim, const expert_mlp& e,
                gate_activation activation, experts_scratch& s, float* out) {
  s.gate_up.resize(std::max<size_t>(s.gate_up.size(), n * 2 * e.width));
  s.act.resize(std::max<size_t>(s.act.size(), n * e.width));
  linear(rows, e.gate_up, nullptr, n, dim, 2 * e.width, s.gate_up.data());
  if (activation == gate_activation::gelu_tanh)
    gelu_tanh_and_mul(s.gate_up.data(), n, e.width, s.act.data());
  else
    silu_and_mul(s.gate_up.data(), n, e.width, s.act.data());
  linear(s.act.data(), e.down, nullptr, n, e.width, dim, out);
}

}  // namespace

void run_experts(const float* x, int64_t n, int64_t dim, const expert_mlp* experts,
                 int64_t num_experts, const int32_t* expert_of, const float* weight_of, int64_t k,
                 const expert_mlp& shared, const float* shared_gate, gate_activation activation,
                 experts_scratch& s, float* y) {
  for (int64_t i = 0; i < n * k; ++i)
    if (expert_of[i] < 0 || expert_of[i] >= num_experts)
      throw std::out_of_range("run_experts: a routing chose an expert outside the layer");
  // Group the (token, expert) choices by expert, token order kept within an expert.
  s.order.resize(n * k);
  std::iota(s.order.begin(), s.order.end(), 0);
  std::stable_sort(s.order.begin(), s.order.end(),
                   [&](int32_t a, int32_t b) { return expert_of[a] < expert_of[b]; });
  std::fill(y, y + n * dim, 0.0f);
  s.rows.resize(std::max<size_t>(s.rows.size(), n * k * dim));
  s.out.resize(std::max<size_t>(s.out.size(), n * k * dim));
  for (size_t begin = 0; begin < s.order.size();) {
    const int32_t e = expert_of[s.order[begin]];
    size_t end = begin;
    while (end < s.order.size() && expert_of[s.order[end]] == e) ++end;
    const auto m = static_cast<int64_t>(end - begin);
    for (int64_t r = 0; r < m; ++r) {
      const int64_t t = s.order[begin + r] / k;
      std::copy(x + t * dim, x + (t + 1) * dim, s.rows.data() + r * dim);
    }
    run_expert(s.rows.data(), m, dim, experts[e], activation, s, s.out.data());
    for (int64_t r = 0; r < m; ++r) {
      const int32_t choice = s.order[begin + r];
      const float weight = weight_of[choice];
      float* dst = y + (choice / k) * dim;
      const float* src = s.out.data() + r * dim;
      for (int64_t d = 0; d < dim; ++d) dst[d] += weight * src[d];
    }
    begin = end;
  }

  if (shared.width > 0) {
    run_expert(x, n, dim, shared, activation, s, s.out.data());
    for (int64_t t = 0; t < n; ++t) {
      float gate = 0.0f;
      for (int64_t d = 0; d < dim; ++d) gate += x[t * dim + d] * shared_gate[d];
      const float scale = 1.0f / (1.0f + std::exp(-gate));
      for (int64_t d = 0; d < dim; ++d) y[t * dim + d] += scale * s.out[t * dim + d];
    }
  }
}

}  // namespace actorllm::cpu
