#include "model/cpu_weight_table.hpp"

#include <memory>

namespace actorllm {

namespace {

const float* rows_or_null(const std::vector<float>& v) {
  return v.empty() ? nullptr : v.data();
}

}  // namespace

std::unique_ptr<const cpu_weight_table> make_cpu_weight_table(const llama_weights& w,
                                                              const packed_llama_weights* packs,
                                                              const model_config_hf& c) {
  auto table = std::make_unique<cpu_weight_table>();
  auto& t = *table;
  auto linear = [&](const std::vector<float>& rows, const cpu::packed_matrix* panels, int64_t in,
                    int64_t out, const std::vector<float>* bias = nullptr) {
    t.linears.push_back({rows_or_null(rows), panels, in, out});
    return op_linear{&t.linears.back(), bias ? rows_or_null(*bias) : nullptr};
  };
  const int64_t dim = c.hidden_size, q_size = c.q_size(), kv_size = c.kv_size();
  const int64_t hidden = c.intermediate_size;

  t.embed = {rows_or_null(w.embed), packs ? &packs->embedding_table() : nullptr};
  t.refs.embed = &t.embed;
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const llama_layer_weights& lw = w.layers[l];
    const auto* pl = packs ? &packs->layers[l] : nullptr;
    decoder_layer_refs r;
    r.input_norm = lw.input_norm.data();
    r.qkv = linear(lw.qkv, pl ? &pl->qkv : nullptr, dim, q_size + 2 * kv_size, &lw.qkv_bias);
    r.q_norm = rows_or_null(lw.q_norm);
    r.k_norm = rows_or_null(lw.k_norm);
    r.o = linear(lw.o, pl ? &pl->o : nullptr, q_size, dim);
    r.attn_out_norm = rows_or_null(lw.attn_out_norm);
    r.post_norm = lw.post_norm.data();
    r.mlp_out_norm = rows_or_null(lw.mlp_out_norm);
    if (lw.sparse()) {
      const moe_weights& m = lw.moe;
      r.router = m.router.data();
      for (const mlp_weights& e : m.experts) {
        r.expert_gate_up.push_back(linear(e.gate_up, nullptr, dim, 2 * e.width));
        r.expert_down.push_back(linear(e.down, nullptr, e.width, dim));
        r.expert_width = e.width;
      }
      if (m.shared.width > 0) {
        r.shared_gate_up = linear(m.shared.gate_up, nullptr, dim, 2 * m.shared.width);
        r.shared_down = linear(m.shared.down, nullptr, m.shared.width, dim);
        r.shared_width = m.shared.width;
        r.shared_gate = m.shared_gate.data();
      }
    } else {
      r.gate_up = linear(lw.gate_up, pl ? &pl->gate_up : nullptr, dim, 2 * hidden);
      r.down = linear(lw.down, pl ? &pl->down : nullptr, hidden, dim);
    }
    t.refs.layers.push_back(std::move(r));
  }
  t.refs.final_norm = w.final_norm.data();
  t.refs.head = linear(w.head(), packs ? &packs->lm_head : nullptr, dim, c.vocab_size);
  t.refs.rotary = w.rotary.cos_sin.data();
  t.refs.local_rotary = rows_or_null(w.local_rotary.cos_sin);
  t.refs.long_rope_offset = w.rotary.long_offset;
  return table;
}

}  // namespace actorllm
