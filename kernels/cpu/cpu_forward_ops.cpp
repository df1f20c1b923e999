#include "kernels/cpu/cpu_forward_ops.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/lora.hpp"
#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

namespace {

/// Where a model keeps float32 rows beside its panels (model/weight_options.hpp says when),
/// batches of up to this many rows run on the panels and larger ones through OpenBLAS on the
/// rows. (Measured before the wide tiles, 110M shapes, 2 cores: the panels 2x at 8 rows, 1.4x
/// at 32, 1.15x at 64, even at 128, OpenBLAS up to 10 % faster above; bench/README section 29
/// has the panels ahead at 128 rows and even at 512.)
constexpr int64_t max_packed_rows = 96;

const float* floats(op_weight w) {
  return static_cast<const float*>(w);
}
const linear_weight& matrix_of(const op_linear& w) {
  if (!w.matrix) throw std::invalid_argument("cpu_forward_ops: a projection without weights");
  return *static_cast<const linear_weight*>(w.matrix);
}

template <class T>
T* layer_tensor(void* const* tensors, int64_t layer) {
  return static_cast<T*>(tensors[layer]);
}

}  // namespace

cpu_forward_ops::cpu_forward_ops(const forward_dims& dims, forward_scratch& scratch,
                                 const paged_cache_view& cache, host_all_reduce* all_reduce,
                                 int32_t tp_rank, std::vector<float>& logits,
                                 std::vector<float>* hidden)
    : dims_(dims),
      s_(scratch),
      cache_(cache),
      all_reduce_(all_reduce),
      tp_rank_(tp_rank),
      logits_(logits),
      hidden_(hidden) {}

void cpu_forward_ops::begin_step(const step_rows& rows) {
  rows_ = rows;
  const int64_t n = rows.num_tokens;
  if (n <= s_.capacity) return;
  s_.capacity = n;
  s_.x.resize(n * dims_.hidden);
  s_.residual.resize(n * dims_.hidden);
  s_.q.resize(n * dims_.q_size());
  s_.k.resize(n * dims_.kv_size());
  s_.v.resize(n * dims_.kv_size());
  s_.attention.resize(n * dims_.q_size());
  s_.gate_up.resize(n * 2 * dims_.intermediate);
  s_.act.resize(n * dims_.intermediate);
  s_.last.resize(n * dims_.hidden);
}

float* cpu_forward_ops::buffer(act_buffer b) {
  switch (b) {
    case act_buffer::x:
      return s_.x.data();
    case act_buffer::residual:
      return s_.residual.data();
    case act_buffer::q:
      return s_.q.data();
    case act_buffer::attention:
      return s_.attention.data();
    case act_buffer::last:
      return s_.last.data();
    case act_buffer::hidden:
      return hidden_ ? hidden_->data() : nullptr;
  }
  return nullptr;
}

int64_t cpu_forward_ops::width(act_buffer b) const {
  return b == act_buffer::q || b == act_buffer::attention ? dims_.q_size() : dims_.hidden;
}

void cpu_forward_ops::project(const float* x, const op_linear& w, int64_t n, float* y) {
  const linear_weight& m = matrix_of(w);
  // No float32 rows: the panels are the only copy, for every batch size.
  if (m.packed && (n <= max_packed_rows || !m.dense))
    cpu::linear_packed(x, *m.packed, floats(w.bias), n, y);
  else
    cpu::linear(x, m.dense, floats(w.bias), n, m.in_features, m.out_features, y);
}

void cpu_forward_ops::add_lora(const float* x, int64_t in, float* y, int64_t out, int64_t y_stride,
                               op_loras lora) {
  if (!lora || !rows_.adapter_of_row) return;
  cpu::add_lora(x, rows_.num_tokens, in, y, out, y_stride,
                {rows_.adapter_of_row, static_cast<size_t>(rows_.num_tokens)},
                {lora, static_cast<size_t>(rows_.num_adapters)}, s_.lora);
}

void cpu_forward_ops::embed(op_weight table, float multiplier) {
  const auto& t = *static_cast<const embedding_weight*>(table);
  const int64_t n = rows_.num_tokens, dim = dims_.hidden;
  float* residual = s_.residual.data();
  if (!t.dense)  // the table's only copy is packed
    cpu::gather_rows(*t.packed, rows_.token_ids, n, residual);
  else
    cpu::embedding(t.dense, rows_.token_ids, n, dim, residual);
  if (multiplier != 1.0f)
    for (int64_t i = 0; i < n * dim; ++i) residual[i] *= multiplier;  // in float32, as HF
  std::fill(s_.x.begin(), s_.x.begin() + n * dim, 0.0f);
}

void cpu_forward_ops::add_rms_norm(op_weight weight, float eps) {
  cpu::fused_add_rms_norm(s_.x.data(), s_.residual.data(), floats(weight), rows_.num_tokens,
                          dims_.hidden, eps);
}

void cpu_forward_ops::rms_norm(act_buffer b, op_weight weight, float eps) {
  float* rows = buffer(b);
  const int64_t n = b == act_buffer::last     ? rows_.num_logits
                    : b == act_buffer::hidden ? rows_.num_hidden
                                              : rows_.num_tokens;
  cpu::rms_norm(rows, floats(weight), n, width(b), eps, rows);
}

void cpu_forward_ops::qkv_to_cache(int64_t layer, const op_linear& qkv, const qkv_params& p) {
  const int64_t n = rows_.num_tokens, dim = dims_.hidden;
  const int64_t q_size = dims_.q_size(), kv_size = dims_.kv_size();
  const float* x = s_.x.data();
  const linear_weight& w = matrix_of(qkv);
  const float* bias = floats(qkv.bias);
  const output_slice parts[] = {
      {q_size, s_.q.data()}, {kv_size, s_.k.data()}, {kv_size, s_.v.data()}};
  constexpr int64_t panel = packed_matrix::panel_width;
  if (w.packed &&
      ((n <= max_packed_rows && q_size % panel == 0 && kv_size % panel == 0) || !w.dense)) {
    cpu::linear_packed_split(x, *w.packed, bias, n, parts);
  } else {
    // One GEMM per part, each over its rows of the fused weight.
    int64_t first = 0;
    for (const auto& part : parts) {
      cpu::linear(x, w.dense + first * dim, bias ? bias + first : nullptr, n, dim,
                  part.num_features, part.dst);
      first += part.num_features;
    }
  }
  add_lora(x, dim, s_.q.data(), q_size, q_size, p.q_lora);
  add_lora(x, dim, s_.k.data(), kv_size, kv_size, p.k_lora);
  add_lora(x, dim, s_.v.data(), kv_size, kv_size, p.v_lora);
  if (p.q_norm) {
    // Each head of q and k normalised before the rotation.
    cpu::rms_norm(s_.q.data(), floats(p.q_norm), n * dims_.num_heads, dims_.head_dim, p.eps,
                  s_.q.data());
    cpu::rms_norm(s_.k.data(), floats(p.k_norm), n * dims_.num_kv_heads, dims_.head_dim, p.eps,
                  s_.k.data());
  }
  if (rows_.axis_positions)
    cpu::sectioned_rotary_embedding(rows_.axis_positions, p.rotary_sections.data(), s_.q.data(),
                                    s_.k.data(), n, dims_.num_heads, dims_.num_kv_heads,
                                    dims_.head_dim, floats(p.rotary));
  else
    cpu::rotary_embedding(rows_.positions, s_.q.data(), s_.k.data(), n, dims_.num_heads,
                          dims_.num_kv_heads, dims_.head_dim, floats(p.rotary), dims_.head_dim,
                          true);
  auto store = [&](auto* k_cache, auto* v_cache) {
    cpu::reshape_and_cache(s_.k.data(), s_.v.data(), k_cache, v_cache, rows_.slot_mapping, n,
                           dims_.num_kv_heads, dims_.head_dim, cache_.block_size);
  };
  switch (cache_.element) {
    case cache_element::f16:
      return store(layer_tensor<half>(cache_.k, layer), layer_tensor<half>(cache_.v, layer));
    case cache_element::f8:
      return store(layer_tensor<float8_e4m3>(cache_.k, layer),
                   layer_tensor<float8_e4m3>(cache_.v, layer));
    case cache_element::f32:
      return store(layer_tensor<float>(cache_.k, layer), layer_tensor<float>(cache_.v, layer));
  }
}

void cpu_forward_ops::attention(int64_t layer, const attention_params& p) {
  const paged_batch paged{rows_.query_start_loc, rows_.seq_lens,           rows_.block_tables,
                          rows_.num_seqs,        rows_.max_blocks_per_seq, rows_.visible_spans};
  const attention_options options{p.scale, p.sliding_window, p.softcap};
  auto attend = [&](auto* k_cache, auto* v_cache) {
    cpu::paged_attention(s_.q.data(), k_cache, v_cache, paged, dims_.num_heads, dims_.num_kv_heads,
                         dims_.head_dim, cache_.block_size, options, s_.attention.data());
  };
  switch (cache_.element) {
    case cache_element::f16:
      return attend(layer_tensor<half>(cache_.k, layer), layer_tensor<half>(cache_.v, layer));
    case cache_element::f8:
      return attend(layer_tensor<float8_e4m3>(cache_.k, layer),
                    layer_tensor<float8_e4m3>(cache_.v, layer));
    case cache_element::f32:
      return attend(layer_tensor<float>(cache_.k, layer), layer_tensor<float>(cache_.v, layer));
  }
}

void cpu_forward_ops::linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) {
  const linear_weight& m = matrix_of(w);
  const float* x = buffer(in);
  float* y = buffer(out);
  project(x, w, rows_.num_tokens, y);
  add_lora(x, m.in_features, y, m.out_features, m.out_features, lora);
}

void cpu_forward_ops::mlp(const mlp_params& p) {
  const int64_t n = rows_.num_tokens, dim = dims_.hidden, width = p.width;
  float* x = s_.x.data();
  float* gate_up = s_.gate_up.data();
  project(x, p.gate_up, n, gate_up);
  add_lora(x, dim, gate_up, width, 2 * width, p.gate_lora);
  add_lora(x, dim, gate_up + width, width, 2 * width, p.up_lora);
  if (p.activation == gate_activation::gelu_tanh)
    cpu::gelu_tanh_and_mul(gate_up, n, width, s_.act.data());
  else
    cpu::silu_and_mul(gate_up, n, width, s_.act.data());
  project(s_.act.data(), p.down, n, x);
  add_lora(s_.act.data(), width, x, dim, dim, p.down_lora);
}

void cpu_forward_ops::experts(const experts_params& p, gate_activation activation) {
  const int64_t n = rows_.num_tokens, dim = dims_.hidden, k = p.top_k;
  const float* x = s_.x.data();
  s_.router_logits.resize(std::max<size_t>(s_.router_logits.size(), n * p.num_experts));
  cpu::linear(x, floats(p.router), nullptr, n, dim, p.num_experts, s_.router_logits.data());
  s_.expert_of.resize(n * k);
  s_.weight_of.resize(n * k);
  (*p.route)(s_.router_logits.data(), n, s_.expert_of.data(), s_.weight_of.data());
  auto rows_of = [](const mlp_params& m) {
    if (m.width == 0) return expert_mlp{};
    const linear_weight &gate_up = matrix_of(m.gate_up), &down = matrix_of(m.down);
    if (!gate_up.dense || !down.dense)
      throw std::invalid_argument("cpu_forward_ops: experts run on float32 rows only");
    return expert_mlp{gate_up.dense, down.dense, m.width};
  };
  s_.experts.clear();
  for (int64_t e = 0; e < p.num_experts; ++e) s_.experts.push_back(rows_of(p.experts[e]));
  s_.experts_out.resize(std::max<size_t>(s_.experts_out.size(), n * dim));
  run_experts(x, n, dim, s_.experts.data(), p.num_experts, s_.expert_of.data(), s_.weight_of.data(),
              k, rows_of(p.shared), floats(p.shared_gate), activation, s_.expert_compute,
              s_.experts_out.data());
  std::copy(s_.experts_out.begin(), s_.experts_out.begin() + n * dim, s_.x.begin());
}

void cpu_forward_ops::all_reduce() {
  // The partial output over this rank's heads or columns.
  if (all_reduce_) all_reduce_->sum(tp_rank_, s_.x.data(), rows_.num_tokens * dims_.hidden);
}

void cpu_forward_ops::gather_final(const int32_t* indices, int64_t count, op_weight final_norm,
                                   float eps, float* out) {
  const int64_t dim = dims_.hidden;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = indices[i];
    for (int64_t d = 0; d < dim; ++d)
      out[i * dim + d] = s_.x[t * dim + d] + s_.residual[t * dim + d];
  }
  cpu::rms_norm(out, floats(final_norm), count, dim, eps, out);
}

void cpu_forward_ops::logits(op_weight final_norm, float eps, const op_linear& head,
                             float softcap) {
  // Only the rows that sample need the final norm and the LM head.
  const int64_t num_logits = rows_.num_logits;
  gather_final(rows_.logits_indices, num_logits, final_norm, eps, s_.last.data());
  logits_.resize(num_logits * dims_.vocab);
  if (num_logits > 0) project(s_.last.data(), head, num_logits, logits_.data());
  if (softcap > 0) cpu::softcap(logits_.data(), num_logits * dims_.vocab, softcap);
}

void cpu_forward_ops::final_hidden(op_weight final_norm, float eps) {
  if (!hidden_) return;
  hidden_->resize(rows_.num_hidden * dims_.hidden);
  gather_final(rows_.hidden_indices, rows_.num_hidden, final_norm, eps, hidden_->data());
}

void cpu_forward_ops::set_rows(const int32_t* rows, const float* values, int64_t count) {
  const int64_t hidden = width(act_buffer::residual);
  float* residual = buffer(act_buffer::residual);
  for (int64_t i = 0; i < count; ++i)
    std::copy_n(values + i * hidden, hidden, residual + static_cast<int64_t>(rows[i]) * hidden);
}

void cpu_forward_ops::write(act_buffer b, const float* rows, int64_t count) {
  std::copy(rows, rows + count * width(b), buffer(b));
}

void cpu_forward_ops::read(act_buffer b, float* rows, int64_t count) {
  const float* from = buffer(b);
  std::copy(from, from + count * width(b), rows);
}

void cpu_forward_ops::read_logits(float* out) {
  std::copy(logits_.begin(), logits_.end(), out);
}

}  // namespace actorllm::cpu
