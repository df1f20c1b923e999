#include "model/weight_handles.hpp"

#include <stdexcept>

namespace actorllm {

decoder_refs decoder_refs_of(const llama_weights& w, const packed_llama_weights* packs,
                             const model_config_hf& c, weight_handle_maker& make) {
  const auto vector = [&](const std::string& name, const std::vector<float>& values) {
    return values.empty() ? nullptr : make.vector(name, values);
  };
  const int64_t dim = c.hidden_size, q_size = c.q_size(), kv_size = c.kv_size();
  const int64_t hidden = c.intermediate_size;

  decoder_refs refs;
  refs.embed = make.embedding(w.embed, packs ? &packs->embedding_table() : nullptr);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const llama_layer_weights& lw = w.layers[l];
    const auto* pl = packs ? &packs->layers[l] : nullptr;
    const std::string at = "layers." + std::to_string(l) + ".";
    decoder_layer_refs r;
    r.input_norm = vector(at + "input_norm", lw.input_norm);
    r.qkv = make.linear(at + "qkv", lw.qkv, pl ? &pl->qkv : nullptr, dim, q_size + 2 * kv_size,
                        vector(at + "qkv_bias", lw.qkv_bias));
    r.q_norm = vector(at + "q_norm", lw.q_norm);
    r.k_norm = vector(at + "k_norm", lw.k_norm);
    r.o = make.linear(at + "o", lw.o, pl ? &pl->o : nullptr, q_size, dim, nullptr);
    r.attn_out_norm = vector(at + "attn_out_norm", lw.attn_out_norm);
    r.post_norm = vector(at + "post_norm", lw.post_norm);
    r.mlp_out_norm = vector(at + "mlp_out_norm", lw.mlp_out_norm);
    if (lw.sparse()) {
      // Experts stay float32 rows (no packed copy).
      const moe_weights& m = lw.moe;
      r.router = vector(at + "router", m.router);
      r.expert_width = m.experts.front().width;
      for (size_t e = 0; e < m.experts.size(); ++e) {
        const mlp_weights& expert = m.experts[e];
        if (expert.width != r.expert_width)
          throw std::runtime_error(at + "experts: every expert of a layer must be equally wide");
        const std::string name = at + "experts." + std::to_string(e);
        r.expert_gate_up.push_back(make.linear(name + ".gate_up", expert.gate_up, nullptr, dim,
                                               2 * expert.width, nullptr));
        r.expert_down.push_back(
            make.linear(name + ".down", expert.down, nullptr, expert.width, dim, nullptr));
      }
      if (m.shared.width > 0) {
        r.shared_width = m.shared.width;
        r.shared_gate_up = make.linear(at + "shared.gate_up", m.shared.gate_up, nullptr, dim,
                                       2 * m.shared.width, nullptr);
        r.shared_down =
            make.linear(at + "shared.down", m.shared.down, nullptr, m.shared.width, dim, nullptr);
        r.shared_gate = vector(at + "shared.gate", m.shared_gate);
      }
    } else {
      r.gate_up = make.linear(at + "gate_up", lw.gate_up, pl ? &pl->gate_up : nullptr, dim,
                              2 * hidden, nullptr);
      r.down = make.linear(at + "down", lw.down, pl ? &pl->down : nullptr, hidden, dim, nullptr);
    }
    refs.layers.push_back(std::move(r));
  }
  refs.final_norm = vector("final_norm", w.final_norm);
  const bool tied = w.lm_head.empty() && (!packs || packs->embed.empty());
  refs.head =
      make.head(w.head(), packs ? &packs->lm_head : nullptr, dim, c.vocab_size, tied, refs.embed);
  refs.rotary = make.rotary("rotary", w.rotary.cos_sin);
  if (!w.local_rotary.cos_sin.empty())
    refs.local_rotary = make.rotary("local_rotary", w.local_rotary.cos_sin);
  refs.long_rope_offset = w.rotary.long_offset;
  return refs;
}

}  // namespace actorllm
