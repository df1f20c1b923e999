#pragma once
/// The forward ops (kernels/forward_ops.hpp) on one CUDA device: activations of one type (f32,
/// f16 or bf16) in device buffers, projections through the projector (cuBLAS, or the
/// quantized paths), the paged device KV cache (its elements the activations' type or float8),
/// every launch queued on the projector's stream. Knows no architecture. The backend-ops table
/// (tests/cuda/backend_ops_cuda_test.cpp) checks each op against the float64 reference.
///
/// What the handles are here:
///   a norm, bias or gate                 const void* device rows of the activations' type
///   a rotary table                       const float* device rows (rows, head_dim), float32
///   op_linear::matrix                    const cuda::linear_weight*
///   forward_ops::embed's table           const void* device (vocab, hidden), activations' type
///   an expert's gate_up / down           const cuda::linear_weight*, one width for all experts
///
/// Not served here yet: LoRA adapters (a step whose ops carry pairs is refused).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/feed_forward.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/projector.cuh"
#include "kernels/forward_ops.hpp"

namespace actorllm::cuda {

class cuda_forward_ops final : public forward_ops {
 public:
  /// Sums data(n) of type t over the tensor-parallel group on `stream`, in place.
  using all_reduce_fn = std::function<void(void* data, int64_t n, dtype t, cudaStream_t stream)>;

  /// Ops over `cache` (whose kv heads, head_dim and type must be dims' and `activations`),
  /// through `p` and on its stream. `all_reduce` null: one rank. `max_position` bounds the
  /// step's positions (the rotary tables' rows).
  cuda_forward_ops(const forward_dims& dims, int64_t max_position, dtype activations,
                   device_kv_cache& cache, projector& p, all_reduce_fn all_reduce = {});

  void begin_step(const step_rows& rows) override;
  void embed(op_weight table, float multiplier) override;
  void add_rms_norm(op_weight weight, float eps) override;
  void rms_norm(act_buffer b, op_weight weight, float eps) override;
  void qkv_to_cache(int64_t layer, const op_linear& qkv, const qkv_params& params) override;
  void attention(int64_t layer, const attention_params& params) override;
  void linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) override;
  void mlp(const mlp_params& params) override;
  void experts(const experts_params& params, gate_activation activation) override;
  void all_reduce() override;
  void logits(op_weight final_norm, float eps, const op_linear& head, float softcap) override;
  void final_hidden(op_weight final_norm, float eps) override;
  void end_step() override;
  void write(act_buffer b, const float* rows, int64_t count) override;
  void read(act_buffer b, float* rows, int64_t count) override;
  void read_logits(float* out) override;

  /// Checks a step and stages its rows on the device (begin_step's work). context_bound > 0:
  /// the attention launch is sized for contexts of that many tokens, past the step's own
  /// (a graph's launches must fit every step of its shape), and every pending cache move is
  /// waited for first (a graph holds no wait of its own).
  void stage(const step_rows& rows, int64_t context_bound);
  /// The last step's logits, float32 (num_logits, vocab), on the device.
  float* device_logits();
  /// Every device address the launches read or write: a graph captured over them replays
  /// only while they stay where they were.
  std::vector<const void*> addresses() const;
  cudaStream_t stream() const { return p_.stream(); }
  int64_t vocab() const { return dims_.vocab; }
  int64_t block_size() const { return cache_.layout().block_size; }

 private:
  void* buffer(act_buffer b) const;
  int64_t width(act_buffer b) const;
  /// Refuses LoRA pairs on a step with adapters (not served on CUDA yet).
  void refuse_lora(op_loras lora) const;
  /// rms_norm(x + residual) * final_norm at `indices` (device, count rows) into out.
  void gather_final(const int32_t* indices, int64_t count, op_weight final_norm, float eps,
                    void* out, void* residual_rows);

  forward_dims dims_;
  int64_t max_position_;
  dtype t_;
  device_kv_cache& cache_;
  projector& p_;
  all_reduce_fn all_reduce_;
  expert_dispatch experts_;
  std::vector<linear_weight> expert_gate_up_, expert_down_;  // experts()'s, reused

  // The step.
  step_rows rows_;
  paged_batch paged_;
  paged_split split_;
  const int32_t *token_ids_ = nullptr, *positions_ = nullptr, *logits_indices_ = nullptr,
                *hidden_indices_ = nullptr;
  const int64_t* slot_mapping_ = nullptr;
  pinned_buffer staging_;
  device_buffer batch_;

  // Activations of type t, grown to the largest step.
  device_buffer x_, residual_, qkv_, q_, attention_, gate_up_, act_, last_, last_residual_, hidden_,
      hidden_residual_, logits_, logits_f32_, decode_workspace_, float_rows_;
};

}  // namespace actorllm::cuda
