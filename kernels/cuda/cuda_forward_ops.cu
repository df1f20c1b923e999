#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/cuda_forward_ops.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/host_batch.hpp"
#include "kernels/cuda/paged_attention_decode.cuh"
#include "kernels/cuda/qkv_to_cache.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/silu_and_mul.cuh"

namespace actorllm::cuda {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("cuda_forward_ops: " + what);
}

const linear_weight& matrix_of(const op_linear& w) {
  require(w.matrix != nullptr, "a projection without weights");
  return *static_cast<const linear_weight*>(w.matrix);
}

}  // namespace

cuda_forward_ops::cuda_forward_ops(const forward_dims& dims, int64_t max_position,
                                   dtype activations, device_kv_cache& cache, projector& p,
                                   all_reduce_fn all_reduce)
    : dims_(dims),
      max_position_(max_position),
      t_(activations),
      cache_(cache),
      p_(p),
      all_reduce_(std::move(all_reduce)) {
  const kv_cache_layout& layout = cache.layout();
  require(layout.num_kv_heads == dims.num_kv_heads && layout.head_dim == dims.head_dim &&
              layout.type == activations,
          "the KV cache does not match the model (kv heads, head_dim, type)");
}

void cuda_forward_ops::begin_step(const step_rows& b) {
  stage(b, 0);
}

void cuda_forward_ops::stage(const step_rows& b, int64_t context_bound) {
  const kv_cache_layout& layout = cache_.layout();
  const int64_t n = b.num_tokens, seqs = b.num_seqs, block_size = layout.block_size;
  step_extent extent =
      check_host_batch(b, layout.num_blocks, block_size,
                       max_position_ > 0 ? max_position_ : std::numeric_limits<int32_t>::max(),
                       dims_.vocab, "cuda_forward_ops");
  require(context_bound == 0 || context_bound >= extent.max_seq_len,
          "a context past the step's bound");
  if (context_bound > 0) {
    extent.max_seq_len = context_bound;
    cache_.wait_for_moves(p_.stream());
  }
  rows_ = b;

  // The step's arrays in one copy. The staging buffer is reused by the next step: wait for
  // the last copy out of it.
  const host_array arrays[] = {
      {b.token_ids, static_cast<size_t>(n) * sizeof(int32_t)},
      {b.positions, static_cast<size_t>(n) * sizeof(int32_t)},
      {b.logits_indices, static_cast<size_t>(b.num_logits) * sizeof(int32_t)},
      {b.hidden_indices, static_cast<size_t>(b.num_hidden) * sizeof(int32_t)},
      {b.query_start_loc, static_cast<size_t>(seqs + 1) * sizeof(int32_t)},
      {b.seq_lens, static_cast<size_t>(seqs) * sizeof(int32_t)},
      {b.block_tables, static_cast<size_t>(seqs * b.max_blocks_per_seq) * sizeof(int32_t)},
      {b.slot_mapping, static_cast<size_t>(n) * sizeof(int64_t)},
  };
  CUDA_CHECK(cudaStreamSynchronize(p_.stream()));
  const char* at[std::size(arrays)];
  stage_host_arrays(arrays, std::size(arrays), staging_, batch_, p_.stream(), at);
  token_ids_ = reinterpret_cast<const int32_t*>(at[0]);
  positions_ = reinterpret_cast<const int32_t*>(at[1]);
  logits_indices_ = reinterpret_cast<const int32_t*>(at[2]);
  hidden_indices_ = reinterpret_cast<const int32_t*>(at[3]);
  slot_mapping_ = reinterpret_cast<const int64_t*>(at[7]);

  paged_ = paged_batch{};
  paged_.query_start_loc = reinterpret_cast<const int32_t*>(at[4]);
  paged_.seq_lens = reinterpret_cast<const int32_t*>(at[5]);
  paged_.block_tables = reinterpret_cast<const int32_t*>(at[6]);
  paged_.num_seqs = seqs;
  paged_.max_blocks_per_seq = b.max_blocks_per_seq;
  paged_.num_tokens = n;
  paged_.max_query_len = extent.max_query_len;
  paged_.max_seq_len = extent.max_seq_len;
  paged_.cache = layout.format;
  // The leading one-token queries run the decode kernels, the rest the prefill kernel.
  split_ = split_decode_prefix(paged_, b.query_start_loc, b.seq_lens, dims_.head_dim);
  // A batch of decodes only under a bound (a graph's) is sized by it, past the real lengths.
  if (context_bound > 0 && split_.decode.num_seqs == seqs)
    split_.decode.max_seq_len = context_bound;
  if (split_.decode.num_seqs > 0)
    decode_workspace_.grow(paged_attention_decode_workspace_bytes(
        split_.decode.num_seqs, dims_.num_heads, dims_.head_dim, split_.decode.max_seq_len));

  const size_t es = static_cast<size_t>(dtype_size(t_));
  const auto rows = static_cast<size_t>(n);
  x_.grow(rows * dims_.hidden * es);
  residual_.grow(rows * dims_.hidden * es);
  qkv_.grow(rows * (dims_.q_size() + 2 * dims_.kv_size()) * es);
  q_.grow(rows * dims_.q_size() * es);
  attention_.grow(rows * dims_.q_size() * es);
  gate_up_.grow(rows * 2 * dims_.intermediate * es);
  act_.grow(rows * dims_.intermediate * es);
  const auto logits_rows = static_cast<size_t>(std::max<int64_t>(b.num_logits, 1));
  last_.grow(logits_rows * dims_.hidden * es);
  last_residual_.grow(logits_rows * dims_.hidden * es);
  logits_.grow(logits_rows * dims_.vocab * es);
  logits_f32_.grow(logits_rows * dims_.vocab * sizeof(float));
  const auto hidden_rows = static_cast<size_t>(std::max<int64_t>(b.num_hidden, 1));
  hidden_.grow(hidden_rows * dims_.hidden * es);
  hidden_residual_.grow(hidden_rows * dims_.hidden * es);
}

void* cuda_forward_ops::buffer(act_buffer b) const {
  switch (b) {
    case act_buffer::x:
      return x_.get();
    case act_buffer::residual:
      return residual_.get();
    case act_buffer::q:
      return q_.get();
    case act_buffer::attention:
      return attention_.get();
    case act_buffer::last:
      return last_.get();
    case act_buffer::hidden:
      return hidden_.get();
  }
  return nullptr;
}

int64_t cuda_forward_ops::width(act_buffer b) const {
  return b == act_buffer::q || b == act_buffer::attention ? dims_.q_size() : dims_.hidden;
}

void cuda_forward_ops::refuse_lora(op_loras lora) const {
  require(!lora || !rows_.adapter_of_row, "LoRA adapters are not served on CUDA yet");
}

void cuda_forward_ops::embed(op_weight table, float multiplier) {
  const int64_t n = rows_.num_tokens, dim = dims_.hidden;
  embedding(table, token_ids_, n, dim, residual_.get(), t_, p_.stream(), dims_.vocab);
  if (multiplier != 1.0f) scale_in_place(residual_.get(), n * dim, multiplier, t_, p_.stream());
  CUDA_CHECK(
      cudaMemsetAsync(x_.get(), 0, static_cast<size_t>(n * dim * dtype_size(t_)), p_.stream()));
}

void cuda_forward_ops::add_rms_norm(op_weight weight, float eps) {
  fused_add_rms_norm(x_.get(), residual_.get(), weight, rows_.num_tokens, dims_.hidden, eps, t_,
                     p_.stream());
}

void cuda_forward_ops::rms_norm(act_buffer b, op_weight weight, float eps) {
  const int64_t n = b == act_buffer::last     ? rows_.num_logits
                    : b == act_buffer::hidden ? rows_.num_hidden
                                              : rows_.num_tokens;
  cuda::rms_norm(buffer(b), weight, n, width(b), eps, buffer(b), t_, p_.stream());
}

void cuda_forward_ops::qkv_to_cache(int64_t layer, const op_linear& qkv, const qkv_params& p) {
  refuse_lora(p.q_lora);
  refuse_lora(p.k_lora);
  refuse_lora(p.v_lora);
  require((p.q_norm == nullptr) == (p.k_norm == nullptr), "q_norm and k_norm come together");
  const int64_t n = rows_.num_tokens;
  const int64_t qkv_size = dims_.q_size() + 2 * dims_.kv_size();
  p_.linear(matrix_of(qkv), x_.get(), qkv.bias, n, dims_.hidden, qkv_size, qkv_.get(), t_);
  // The step's swaps of this layer's blocks land on the cache's copy stream: wait for them
  // here, so that earlier layers compute while later ones still move.
  cache_.wait_for_layer(layer, p_.stream());
  qkv_to_cache_args args;
  args.qkv = qkv_.get();
  args.positions = positions_;
  args.cos_sin = static_cast<const float*>(p.rotary);
  args.q_norm = p.q_norm;
  args.k_norm = p.k_norm;
  args.eps = p.eps;
  args.slot_mapping = slot_mapping_;
  args.k_cache = cache_.k(layer);
  args.v_cache = cache_.v(layer);
  args.q_out = q_.get();
  args.n = n;
  args.num_heads = dims_.num_heads;
  args.num_kv_heads = dims_.num_kv_heads;
  args.head_dim = dims_.head_dim;
  args.block_size = cache_.layout().block_size;
  cuda::qkv_to_cache(args, t_, cache_.layout().format, p_.stream());
}

void cuda_forward_ops::attention(int64_t layer, const attention_params& p) {
  paged_.sliding_window = split_.decode.sliding_window = split_.prefill.sliding_window =
      p.sliding_window;
  paged_.softcap = split_.decode.softcap = split_.prefill.softcap = p.softcap;
  const bool decode_rows = split_.decode.num_seqs > 0;
  paged_attention(q_.get(), cache_.k(layer), cache_.v(layer), paged_, split_, dims_.num_heads,
                  dims_.num_kv_heads, dims_.head_dim, cache_.layout().block_size, p.scale,
                  attention_.get(), t_, p_.stream(),
                  decode_rows ? decode_workspace_.get() : nullptr,
                  decode_rows ? decode_workspace_.size() : 0);
}

void cuda_forward_ops::linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) {
  refuse_lora(lora);
  p_.linear(matrix_of(w), buffer(in), w.bias, rows_.num_tokens, width(in), width(out), buffer(out),
            t_);
}

void cuda_forward_ops::mlp(const mlp_params& p) {
  refuse_lora(p.gate_lora);
  refuse_lora(p.up_lora);
  refuse_lora(p.down_lora);
  require(p.width <= dims_.intermediate, "an MLP wider than the dims' intermediate size");
  gated_mlp(p_, x_.get(), rows_.num_tokens, dims_.hidden, p.width, matrix_of(p.gate_up),
            matrix_of(p.down), p.activation, gate_up_.get(), act_.get(), x_.get(), t_);
}

void cuda_forward_ops::experts(const experts_params& p, gate_activation activation) {
  require(p.route != nullptr && p.num_experts > 0 && p.top_k > 0 && p.top_k <= p.num_experts,
          "experts need a router, experts and 0 < top_k <= num_experts");
  expert_gate_up_.clear();
  expert_down_.clear();
  for (int64_t e = 0; e < p.num_experts; ++e) {
    require(p.experts[e].width == p.experts[0].width, "experts of one width only");
    expert_gate_up_.push_back(matrix_of(p.experts[e].gate_up));
    expert_down_.push_back(matrix_of(p.experts[e].down));
  }
  experts_on_device w;
  w.router = p.router;
  w.gate_up = expert_gate_up_.data();
  w.down = expert_down_.data();
  w.num_experts = p.num_experts;
  w.top_k = p.top_k;
  w.width = p.experts[0].width;
  if (p.shared.width > 0) {
    w.shared_gate_up = matrix_of(p.shared.gate_up);
    w.shared_down = matrix_of(p.shared.down);
    w.shared_width = p.shared.width;
    w.shared_gate = p.shared_gate;
  }
  experts_.run(p_, w, *p.route, activation, x_.get(), rows_.num_tokens, dims_.hidden, t_);
}

void cuda_forward_ops::all_reduce() {
  // The partial output over this rank's heads or columns.
  if (all_reduce_) all_reduce_(x_.get(), rows_.num_tokens * dims_.hidden, t_, p_.stream());
}

void cuda_forward_ops::gather_final(const int32_t* indices, int64_t count, op_weight final_norm,
                                    float eps, void* out, void* residual_rows) {
  // A row gather is an embedding lookup into (n, hidden); then out = rms_norm(x + residual).
  const int64_t n = rows_.num_tokens, dim = dims_.hidden;
  embedding(x_.get(), indices, count, dim, out, t_, p_.stream(), n);
  embedding(residual_.get(), indices, count, dim, residual_rows, t_, p_.stream(), n);
  fused_add_rms_norm(out, residual_rows, final_norm, count, dim, eps, t_, p_.stream());
}

void cuda_forward_ops::logits(op_weight final_norm, float eps, const op_linear& head,
                              float softcap) {
  const int64_t num_logits = rows_.num_logits;
  if (num_logits == 0) return;
  gather_final(logits_indices_, num_logits, final_norm, eps, last_.get(), last_residual_.get());
  const int64_t count = num_logits * dims_.vocab;
  if (t_ == dtype::f32) {
    p_.linear(matrix_of(head), last_.get(), head.bias, num_logits, dims_.hidden, dims_.vocab,
              logits_f32_.get(), t_);
  } else {
    p_.linear(matrix_of(head), last_.get(), head.bias, num_logits, dims_.hidden, dims_.vocab,
              logits_.get(), t_);
    convert(logits_.get(), t_, logits_f32_.get(), dtype::f32, count, p_.stream());
  }
  // In float32, as the CPU caps its float32 logits.
  if (softcap > 0) softcap_in_place(logits_f32_.as<float>(), count, softcap, p_.stream());
}

void cuda_forward_ops::end_step() {}

float* cuda_forward_ops::device_logits() {
  return logits_f32_.as<float>();
}

std::vector<const void*> cuda_forward_ops::addresses() const {
  std::vector<const void*> at = {x_.get(),
                                 residual_.get(),
                                 qkv_.get(),
                                 q_.get(),
                                 attention_.get(),
                                 gate_up_.get(),
                                 act_.get(),
                                 last_.get(),
                                 last_residual_.get(),
                                 logits_.get(),
                                 logits_f32_.get(),
                                 batch_.get(),
                                 decode_workspace_.get(),
                                 cache_.k(0)};
  for (const void* p : p_.scratch_addresses()) at.push_back(p);
  return at;
}

void cuda_forward_ops::final_hidden(op_weight final_norm, float eps) {
  if (rows_.num_hidden == 0) return;
  gather_final(hidden_indices_, rows_.num_hidden, final_norm, eps, hidden_.get(),
               hidden_residual_.get());
}

void cuda_forward_ops::write(act_buffer b, const float* rows, int64_t count) {
  const int64_t elems = count * width(b);
  float_rows_.grow(static_cast<size_t>(elems) * sizeof(float));
  CUDA_CHECK(cudaMemcpyAsync(float_rows_.get(), rows, static_cast<size_t>(elems) * sizeof(float),
                             cudaMemcpyHostToDevice, p_.stream()));
  convert(float_rows_.get(), dtype::f32, buffer(b), t_, elems, p_.stream());
  CUDA_CHECK(cudaStreamSynchronize(p_.stream()));
}

void cuda_forward_ops::read(act_buffer b, float* rows, int64_t count) {
  const int64_t elems = count * width(b);
  float_rows_.grow(static_cast<size_t>(elems) * sizeof(float));
  convert(buffer(b), t_, float_rows_.get(), dtype::f32, elems, p_.stream());
  CUDA_CHECK(cudaMemcpyAsync(rows, float_rows_.get(), static_cast<size_t>(elems) * sizeof(float),
                             cudaMemcpyDeviceToHost, p_.stream()));
  CUDA_CHECK(cudaStreamSynchronize(p_.stream()));
}

void cuda_forward_ops::read_logits(float* out) {
  const size_t bytes = static_cast<size_t>(rows_.num_logits * dims_.vocab) * sizeof(float);
  if (bytes > 0)
    CUDA_CHECK(cudaMemcpyAsync(out, logits_f32_.get(), bytes, cudaMemcpyDeviceToHost, p_.stream()));
  CUDA_CHECK(cudaStreamSynchronize(p_.stream()));
}

}  // namespace actorllm::cuda
