#include "model/decoder_forward.hpp"

#include <stdexcept>

#include "model/lora_adapter.hpp"
#include "model/moe_layer.hpp"

namespace actorllm {

namespace {

/// The rotary rows of the batch's tokens: their positions, past the long factors' offset for
/// a sequence longer than the original context (LongRoPE).
const int32_t* rotary_rows(const forward_batch& b, int64_t long_offset,
                           std::vector<int32_t>& rows) {
  if (long_offset <= 0) return b.positions.data();
  rows.assign(b.positions.begin(), b.positions.end());
  for (int64_t s = 0; s < b.num_seqs(); ++s)
    if (b.seq_lens[s] > long_offset)
      for (int32_t t = b.query_start_loc[s]; t < b.query_start_loc[s + 1]; ++t)
        rows[t] += static_cast<int32_t>(long_offset);
  return rows.data();
}

/// Each adapter's pairs for the projections of `layer`, target after target; null per target
/// where the batch has no adapters.
class layer_loras {
 public:
  layer_loras(const forward_batch& b, std::vector<op_lora_pair>& pairs) : b_(b), pairs_(pairs) {}

  void load(int64_t layer) {
    const size_t adapters = b_.adapters.size();
    if (adapters == 0) return;
    pairs_.assign(num_lora_targets * adapters, op_lora_pair{});
    for (size_t a = 0; a < adapters; ++a) {
      const lora_adapter& adapter = *b_.adapters[a];
      for (size_t t = 0; t < num_lora_targets; ++t)
        if (const auto& pair = adapter.layers.at(layer)[t])
          pairs_[t * adapters + a] = {pair->a.data(), pair->b_t.data(), adapter.rank,
                                      adapter.scaling};
    }
  }
  op_loras of(lora_target target) const {
    if (b_.adapters.empty()) return nullptr;
    return pairs_.data() + static_cast<size_t>(target) * b_.adapters.size();
  }

 private:
  const forward_batch& b_;
  std::vector<op_lora_pair>& pairs_;
};

step_rows rows_of(const forward_batch& b, const int32_t* rotary_positions) {
  step_rows r;
  r.token_ids = b.token_ids.data();
  r.positions = rotary_positions;
  r.slot_mapping = b.slot_mapping.data();
  r.query_start_loc = b.query_start_loc.data();
  r.seq_lens = b.seq_lens.data();
  r.block_tables = b.block_tables.data();
  r.num_tokens = b.num_tokens();
  r.num_seqs = b.num_seqs();
  r.max_blocks_per_seq = b.max_blocks_per_seq;
  r.logits_indices = b.logits_indices.data();
  r.num_logits = static_cast<int64_t>(b.logits_indices.size());
  r.hidden_indices = b.hidden_indices.data();
  r.num_hidden = static_cast<int64_t>(b.hidden_indices.size());
  if (!b.visible_spans.empty()) r.visible_spans = b.visible_spans.data();
  if (!b.axis_positions.empty()) r.axis_positions = b.axis_positions.data();
  if (!b.token_adapters.empty()) {
    r.adapter_of_row = b.token_adapters.data();
    r.num_adapters = static_cast<int64_t>(b.adapters.size());
  }
  return r;
}

gate_activation activation_of(const model_config_hf& c) {
  return c.activation == hidden_activation::gelu_tanh ? gate_activation::gelu_tanh
                                                      : gate_activation::silu;
}

}  // namespace

forward_dims dims_of(const model_config_hf& c) {
  forward_dims d;
  d.hidden = c.hidden_size;
  d.num_heads = c.num_heads;
  d.num_kv_heads = c.num_kv_heads;
  d.head_dim = c.head_dim;
  d.intermediate = c.intermediate_size;
  d.vocab = c.vocab_size;
  return d;
}

void decoder_forward(const model_config_hf& c, const decoder_refs& w, const forward_batch& batch,
                     forward_ops& ops, decoder_scratch& scratch, int32_t tp_size) {
  if (!batch.adapters.empty() && (tp_size > 1 || c.moe.num_experts > 0))
    throw std::invalid_argument(
        "LoRA adapters apply to dense models on one shard (no tensor parallelism, no experts)");
  const auto eps = static_cast<float>(c.rms_norm_eps);
  const gate_activation activation = activation_of(c);
  const expert_router route = c.moe.num_experts > 0 ? router_of(c) : expert_router{};
  layer_loras loras(batch, scratch.lora);

  ops.begin_step(rows_of(batch, rotary_rows(batch, w.long_rope_offset, scratch.rope_positions)));
  ops.embed(w.embed, static_cast<float>(c.embedding_multiplier));
  if (!batch.embedding_rows.empty())
    ops.set_rows(batch.embedding_rows.data(), batch.embedding_values.data(),
                 static_cast<int64_t>(batch.embedding_rows.size()));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const decoder_layer_refs& layer = w.layers[l];
    const int32_t window = c.layer_sliding_window[l];
    loras.load(l);
    // x holds the previous layer's output; fold it into the residual and normalise.
    ops.add_rms_norm(layer.input_norm, eps);
    qkv_params qkv;
    qkv.q_norm = layer.q_norm;
    qkv.k_norm = layer.k_norm;
    qkv.rotary = window > 0 && w.local_rotary ? w.local_rotary : w.rotary;
    qkv.rotary_sections = c.mrope_section;
    qkv.eps = eps;
    qkv.q_lora = loras.of(lora_target::q_proj);
    qkv.k_lora = loras.of(lora_target::k_proj);
    qkv.v_lora = loras.of(lora_target::v_proj);
    ops.qkv_to_cache(l, layer.qkv, qkv);
    ops.attention(
        l, {c.attention_softmax_scale(), window, static_cast<float>(c.attn_logit_softcapping)});
    ops.linear(act_buffer::attention, layer.o, act_buffer::x, loras.of(lora_target::o_proj));
    ops.all_reduce();  // the partial output over this rank's heads
    if (layer.attn_out_norm) ops.rms_norm(act_buffer::x, layer.attn_out_norm, eps);
    ops.add_rms_norm(layer.post_norm, eps);
    if (layer.sparse()) {
      experts_params moe;
      moe.router = layer.router;
      moe.num_experts = static_cast<int64_t>(layer.expert_gate_up.size());
      moe.top_k = c.moe.top_k;
      scratch.experts.resize(static_cast<size_t>(moe.num_experts));
      for (int64_t e = 0; e < moe.num_experts; ++e)
        scratch.experts[e] = {layer.expert_gate_up[e], layer.expert_down[e], layer.expert_width,
                              activation};
      moe.experts = scratch.experts.data();
      moe.shared = {layer.shared_gate_up, layer.shared_down, layer.shared_width, activation};
      moe.shared_gate = layer.shared_gate;
      moe.route = &route;
      ops.experts(moe, activation);
    } else {
      mlp_params mlp{layer.gate_up, layer.down, c.intermediate_size, activation};
      mlp.gate_lora = loras.of(lora_target::gate_proj);
      mlp.up_lora = loras.of(lora_target::up_proj);
      mlp.down_lora = loras.of(lora_target::down_proj);
      ops.mlp(mlp);
    }
    ops.all_reduce();  // the partial output over this rank's columns
    if (layer.mlp_out_norm) ops.rms_norm(act_buffer::x, layer.mlp_out_norm, eps);
  }
  // Embeddings: the final hidden states (after the last norm) of the rows asked for.
  ops.final_hidden(w.final_norm, eps);
  ops.logits(w.final_norm, eps, w.head, static_cast<float>(c.final_logit_softcapping));
  ops.end_step();
}

}  // namespace actorllm
