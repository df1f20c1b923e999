#pragma once
/// The forward ops (kernels/forward_ops.hpp) on the CPU: float32 activations in host buffers,
/// projections through the packed kernels for decode-sized batches and OpenBLAS otherwise,
/// attention over a paged host cache of float32, float16 or float8 elements, the calling
/// thread's team inside each kernel. Knows no architecture.
///
/// What the handles are here (the model's CPU table makes them, model/cpu_weight_table.hpp):
///   a norm, bias, gate or rotary table   const float* (rows of float32)
///   op_linear::matrix                    const cpu::linear_weight*
///   forward_ops::embed's table           const cpu::embedding_weight*
///   an expert's gate_up / down           const cpu::linear_weight* with float32 rows
#include <cstdint>
#include <vector>

#include "kernels/cpu/all_reduce.hpp"
#include "kernels/cpu/experts.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "kernels/forward_ops.hpp"

namespace actorllm::cpu {

/// A projection's weights: float32 rows (out, in) or null, packed panels or null (one of them
/// at least). Decode-sized batches take the panels; larger ones the rows where they exist.
struct linear_weight {
  const float* dense = nullptr;
  const packed_matrix* packed = nullptr;
  int64_t in_features = 0;
  int64_t out_features = 0;
};

/// The embedding table: float32 rows (vocab, dim), or only packed panels.
struct embedding_weight {
  const float* dense = nullptr;
  const packed_matrix* packed = nullptr;
};

enum class cache_element : uint8_t { f32, f16, f8 };

/// A paged host KV cache as the ops read it: each layer's K and V tensors (num_blocks,
/// num_kv_heads, block_size, head_dim) of `element`.
struct paged_cache_view {
  void* const* k = nullptr;  ///< (num_layers)
  void* const* v = nullptr;  ///< (num_layers)
  int64_t num_layers = 0;
  cache_element element = cache_element::f32;
  int64_t block_size = 16;
};

/// Buffers of the CPU forward, grown to the largest step and reused: no allocation once warm.
struct forward_scratch {
  int64_t capacity = 0;
  std::vector<float> x, residual, q, k, v, attention, gate_up, act, last;
  std::vector<float> router_logits, experts_out;
  std::vector<int32_t> expert_of;
  std::vector<float> weight_of;
  std::vector<expert_mlp> experts;
  experts_scratch expert_compute;
  std::vector<float> lora;
};

class cpu_forward_ops final : public forward_ops {
 public:
  /// Ops over `cache`, with `scratch` for buffers; logits go to `logits` (resized), hidden
  /// states to `hidden` (null: none asked). `all_reduce` (null: one rank) sums partial outputs
  /// as rank `tp_rank`.
  cpu_forward_ops(const forward_dims& dims, forward_scratch& scratch, const paged_cache_view& cache,
                  host_all_reduce* all_reduce, int32_t tp_rank, std::vector<float>& logits,
                  std::vector<float>* hidden);

  void begin_step(const step_rows& rows) override;
  void embed(op_weight table, float multiplier) override;
  void set_rows(const int32_t* rows, const float* values, int64_t count) override;
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
  void end_step() override {}
  void write(act_buffer b, const float* rows, int64_t count) override;
  void read(act_buffer b, float* rows, int64_t count) override;
  void read_logits(float* out) override;

 private:
  float* buffer(act_buffer b);
  /// width columns of buffer b.
  int64_t width(act_buffer b) const;
  /// y(n, out) = x(n, in) Wᵀ + bias through the panels or the rows.
  static void project(const float* x, const op_linear& w, int64_t n, float* y);
  /// y (rows of y_stride floats) += each row's adapter update for x (n, in).
  void add_lora(const float* x, int64_t in, float* y, int64_t out, int64_t y_stride, op_loras lora);
  /// Rows of x + residual at `indices`, normalised, into out.
  void gather_final(const int32_t* indices, int64_t count, op_weight final_norm, float eps,
                    float* out);

  forward_dims dims_;
  forward_scratch& s_;
  paged_cache_view cache_;
  host_all_reduce* all_reduce_;
  int32_t tp_rank_;
  std::vector<float>& logits_;
  std::vector<float>* hidden_;
  step_rows rows_;
};

}  // namespace actorllm::cpu
