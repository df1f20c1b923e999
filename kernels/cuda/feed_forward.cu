#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/feed_forward.cuh"
#include "kernels/cuda/moe.cuh"
#include "kernels/cuda/silu_and_mul.cuh"

namespace actorllm::cuda {

namespace {

template <typename T>
void upload(device_buffer& dst, const std::vector<T>& src, cudaStream_t stream) {
  dst.grow(src.size() * sizeof(T));
  if (!src.empty())
    CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.data(), src.size() * sizeof(T),
                               cudaMemcpyHostToDevice, stream));
}

}  // namespace

void gated_mlp(projector& p, const void* x, int64_t m, int64_t dim, int64_t width,
               const linear_weight& gate_up, const linear_weight& down, gate_activation activation,
               void* gate_up_scratch, void* act_scratch, void* out, dtype t) {
  p.linear(gate_up, x, nullptr, m, dim, 2 * width, gate_up_scratch, t);
  if (activation == gate_activation::gelu_tanh)
    gelu_tanh_and_mul(gate_up_scratch, m, width, act_scratch, t, p.stream());
  else
    silu_and_mul(gate_up_scratch, m, width, act_scratch, t, p.stream());
  p.linear(down, act_scratch, nullptr, m, width, dim, out, t);
}

void expert_dispatch::run(projector& p, const experts_on_device& w, const expert_router& route,
                          gate_activation activation, void* x, int64_t n, int64_t dim, dtype t) {
  const cudaStream_t stream = p.stream();
  const size_t es = static_cast<size_t>(dtype_size(t));
  const int64_t experts = w.num_experts, k = w.top_k, width = w.width, choices = n * k;

  // Route on the host, from the router's float32 logits.
  router_.grow(static_cast<size_t>(n * experts) * es);
  p.gemm().linear(x, w.router, nullptr, n, dim, experts, router_.get(), t, stream);
  const void* logits = router_.get();
  if (t != dtype::f32) {
    router_f32_.grow(static_cast<size_t>(n * experts) * sizeof(float));
    convert(router_.get(), t, router_f32_.get(), dtype::f32, n * experts, stream);
    logits = router_f32_.get();
  }
  host_router_.resize(static_cast<size_t>(n * experts));
  CUDA_CHECK(cudaMemcpyAsync(host_router_.data(), logits, host_router_.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  choice_experts_.resize(static_cast<size_t>(choices));
  choice_weights_.resize(static_cast<size_t>(choices));
  route(host_router_.data(), n, choice_experts_.data(), choice_weights_.data());

  // Group the choices by expert (stable: token order within an expert, as the CPU groups).
  expert_rows_.assign(static_cast<size_t>(experts + 1), 0);
  for (int32_t e : choice_experts_) {
    if (e < 0 || e >= experts)
      throw std::invalid_argument("expert_dispatch: the routing chose an expert outside the layer");
    ++expert_rows_[static_cast<size_t>(e) + 1];
  }
  for (int64_t e = 0; e < experts; ++e) expert_rows_[e + 1] += expert_rows_[e];
  grouped_tokens_.resize(static_cast<size_t>(choices));
  row_of_choice_.resize(static_cast<size_t>(choices));
  next_row_.assign(expert_rows_.begin(), expert_rows_.end() - 1);
  for (int64_t choice = 0; choice < choices; ++choice) {
    const int32_t row = next_row_[static_cast<size_t>(choice_experts_[choice])]++;
    grouped_tokens_[static_cast<size_t>(row)] = static_cast<int32_t>(choice / k);
    row_of_choice_[static_cast<size_t>(choice)] = row;
  }
  upload(tokens_, grouped_tokens_, stream);
  upload(row_of_, row_of_choice_, stream);
  upload(weights_, choice_weights_, stream);

  // Each expert once over the rows routed to it (a gather is an embedding lookup into x).
  rows_.grow(static_cast<size_t>(choices * dim) * es);
  gate_up_.grow(static_cast<size_t>(choices * 2 * width) * es);
  act_.grow(static_cast<size_t>(choices * width) * es);
  out_.grow(static_cast<size_t>(choices * dim) * es);
  embedding(x, tokens_.as<int32_t>(), choices, dim, rows_.get(), t, stream, n);
  char* rows = rows_.as<char>();
  char* gate_up = gate_up_.as<char>();
  char* act = act_.as<char>();
  char* out = out_.as<char>();
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t first = expert_rows_[e], m = expert_rows_[e + 1] - first;
    if (m == 0) continue;
    gated_mlp(p, rows + first * dim * es, m, dim, width, w.gate_up[e], w.down[e], activation,
              gate_up + first * 2 * width * es, act + first * width * es, out + first * dim * es,
              t);
  }

  // The shared expert (Qwen2-MoE): every token, scaled by sigmoid(x . gate).
  const void* shared_out = nullptr;
  const void* shared_logit = nullptr;
  if (const int64_t sw = w.shared_width; sw > 0) {
    shared_gate_up_.grow(static_cast<size_t>(n * 2 * sw) * es);
    shared_act_.grow(static_cast<size_t>(n * sw) * es);
    shared_out_.grow(static_cast<size_t>(n * dim) * es);
    shared_logit_.grow(static_cast<size_t>(n) * es);
    gated_mlp(p, x, n, dim, sw, w.shared_gate_up, w.shared_down, activation, shared_gate_up_.get(),
              shared_act_.get(), shared_out_.get(), t);
    p.gemm().linear(x, w.shared_gate, nullptr, n, dim, 1, shared_logit_.get(), t, stream);
    shared_out = shared_out_.get();
    shared_logit = shared_logit_.get();
  }
  // x is read above only: the combine may overwrite it.
  moe_combine(out_.get(), row_of_.as<int32_t>(), weights_.as<float>(), n, k, dim, shared_out,
              shared_logit, x, t, stream);
}

}  // namespace actorllm::cuda
