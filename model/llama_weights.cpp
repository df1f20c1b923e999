#include "model/llama_weights.hpp"

#include <stdexcept>
#include <string>

namespace actorllm {
namespace {

std::vector<float> concat(std::vector<std::vector<float>> parts) {
  std::vector<float> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

/// Reads the norm weights, stored as (1 + w) where the family's norm scales that way.
class norm_reader {
 public:
  norm_reader(const tensor_store& store, bool adds_one) : store_(store), adds_one_(adds_one) {}
  std::vector<float> operator()(const std::string& name, int64_t size) const {
    auto w = store_.load_f32(name, {size});
    if (adds_one_)
      for (float& x : w) x += 1.0f;
    return w;
  }

 private:
  const tensor_store& store_;
  bool adds_one_;
};

/// gate, up, down under `prefix` with the given names (HF's: gate_proj up_proj down_proj;
/// Mixtral's experts: w1 w3 w2).
mlp_weights load_mlp(const tensor_store& store, const std::string& prefix, int64_t dim,
                     int64_t width, const char* gate = "gate_proj", const char* up = "up_proj",
                     const char* down = "down_proj") {
  mlp_weights m;
  m.width = width;
  m.gate_up = concat({store.load_f32(prefix + gate + ".weight", {width, dim}),
                      store.load_f32(prefix + up + ".weight", {width, dim})});
  m.down = store.load_f32(prefix + down + ".weight", {dim, width});
  return m;
}

moe_weights load_moe(const tensor_store& store, const std::string& p, const model_config_hf& c) {
  const int64_t dim = c.hidden_size, width = c.moe.expert_intermediate_size;
  moe_weights m;
  const bool mixtral = store.contains(p + "block_sparse_moe.gate.weight");
  const std::string base = mixtral ? p + "block_sparse_moe." : p + "mlp.";
  m.router = store.load_f32(base + "gate.weight", {c.moe.num_experts, dim});
  for (int64_t e = 0; e < c.moe.num_experts; ++e) {
    const std::string ep = base + "experts." + std::to_string(e) + ".";
    m.experts.push_back(mixtral ? load_mlp(store, ep, dim, width, "w1", "w3", "w2")
                                : load_mlp(store, ep, dim, width));
  }
  if (c.moe.shared_expert_intermediate_size > 0) {
    m.shared = load_mlp(store, base + "shared_expert.", dim, c.moe.shared_expert_intermediate_size);
    m.shared_gate = store.load_f32(base + "shared_expert_gate.weight", {1, dim});
  } else {
    // A shared expert in the file that the config turns off would be silently dropped.
    for (const char* part : {"shared_expert_gate.weight", "shared_expert.gate_proj.weight",
                             "shared_expert.up_proj.weight", "shared_expert.down_proj.weight"})
      if (store.contains(base + part))
        throw std::runtime_error(
            "config.json: shared_expert_intermediate_size is 0, but the "
            "checkpoint holds a shared expert (" +
            base + part + ")");
  }
  return m;
}

}  // namespace

llama_weights load_llama_weights(const tensor_store& store, const model_config_hf& c,
                                 bool with_matrices) {
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  const norm_reader norm(store, c.norm_adds_one);
  llama_weights w;
  if (with_matrices) w.embed = store.load_f32("model.embed_tokens.weight", {c.vocab_size, dim});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    llama_layer_weights lw;
    lw.input_norm = norm(p + "input_layernorm.weight", dim);
    // Phi-3 ships q, k and v fused already, in our order.
    if (with_matrices && store.contains(p + "self_attn.qkv_proj.weight"))
      lw.qkv = store.load_f32(p + "self_attn.qkv_proj.weight", {q + 2 * kv, dim});
    else if (with_matrices)
      lw.qkv = concat({store.load_f32(p + "self_attn.q_proj.weight", {q, dim}),
                       store.load_f32(p + "self_attn.k_proj.weight", {kv, dim}),
                       store.load_f32(p + "self_attn.v_proj.weight", {kv, dim})});
    if (c.attention_bias)
      lw.qkv_bias = concat({store.load_f32(p + "self_attn.q_proj.bias", {q}),
                            store.load_f32(p + "self_attn.k_proj.bias", {kv}),
                            store.load_f32(p + "self_attn.v_proj.bias", {kv})});
    if (c.qk_norm) {
      lw.q_norm = norm(p + "self_attn.q_norm.weight", c.head_dim);
      lw.k_norm = norm(p + "self_attn.k_norm.weight", c.head_dim);
    }
    if (with_matrices) lw.o = store.load_f32(p + "self_attn.o_proj.weight", {dim, q});
    if (c.sandwich_norms) {
      // Gemma: post_attention_layernorm normalises the attention's output; the MLP's input
      // and output norms are pre_ and post_feedforward_layernorm.
      lw.attn_out_norm = norm(p + "post_attention_layernorm.weight", dim);
      lw.post_norm = norm(p + "pre_feedforward_layernorm.weight", dim);
      lw.mlp_out_norm = norm(p + "post_feedforward_layernorm.weight", dim);
    } else {
      lw.post_norm = norm(p + "post_attention_layernorm.weight", dim);
    }
    const bool sparse = c.moe.num_experts > 0 && c.moe.layer_is_sparse[l];
    if (sparse) {
      lw.moe = load_moe(store, p, c);
    } else if (with_matrices && store.contains(p + "mlp.gate_up_proj.weight")) {
      lw.gate_up = store.load_f32(p + "mlp.gate_up_proj.weight", {2 * hidden, dim});  // Phi-3
      lw.down = store.load_f32(p + "mlp.down_proj.weight", {dim, hidden});
    } else if (with_matrices) {
      auto m = load_mlp(store, p + "mlp.", dim, hidden);
      lw.gate_up = std::move(m.gate_up);
      lw.down = std::move(m.down);
    }
    w.layers.push_back(std::move(lw));
  }
  w.final_norm = norm("model.norm.weight", dim);
  if (with_matrices && (store.contains("lm_head.weight") || !c.tie_word_embeddings))
    w.lm_head = store.load_f32("lm_head.weight", {c.vocab_size, dim});
  return w;
}

int64_t llama_weights::bytes_read_per_token(const model_config_hf& c) const {
  auto size = [](const std::vector<float>& v) { return static_cast<int64_t>(v.size()); };
  auto mlp = [&](const mlp_weights& m) { return size(m.gate_up) + size(m.down); };
  int64_t floats = size(final_norm);
  for (const auto& l : layers) {
    floats += size(l.input_norm) + size(l.qkv) + size(l.qkv_bias) + size(l.q_norm) +
              size(l.k_norm) + size(l.o) + size(l.attn_out_norm) + size(l.post_norm) +
              size(l.mlp_out_norm) + size(l.gate_up) + size(l.down);
    if (l.sparse()) {
      floats += size(l.moe.router) + mlp(l.moe.shared) + size(l.moe.shared_gate) +
                c.moe.top_k * mlp(l.moe.experts.front());
    }
  }
  floats += size(head());  // empty where packed panels are the only copy
  return floats * 4;
}

}  // namespace actorllm
