#include "model/llama_weights.hpp"

#include <string>

namespace actorllm {
namespace {

std::vector<float> concat(std::vector<std::vector<float>> parts) {
  std::vector<float> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

llama_weights load_llama_weights(const tensor_store& store, const model_config_hf& c) {
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  llama_weights w;
  w.embed = store.load_f32("model.embed_tokens.weight", {c.vocab_size, dim});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    llama_layer_weights lw;
    lw.input_norm = store.load_f32(p + "input_layernorm.weight", {dim});
    lw.qkv = concat({store.load_f32(p + "self_attn.q_proj.weight", {q, dim}),
                     store.load_f32(p + "self_attn.k_proj.weight", {kv, dim}),
                     store.load_f32(p + "self_attn.v_proj.weight", {kv, dim})});
    if (c.attention_bias)
      lw.qkv_bias = concat({store.load_f32(p + "self_attn.q_proj.bias", {q}),
                            store.load_f32(p + "self_attn.k_proj.bias", {kv}),
                            store.load_f32(p + "self_attn.v_proj.bias", {kv})});
    lw.o = store.load_f32(p + "self_attn.o_proj.weight", {dim, q});
    lw.post_norm = store.load_f32(p + "post_attention_layernorm.weight", {dim});
    lw.gate_up = concat({store.load_f32(p + "mlp.gate_proj.weight", {hidden, dim}),
                         store.load_f32(p + "mlp.up_proj.weight", {hidden, dim})});
    lw.down = store.load_f32(p + "mlp.down_proj.weight", {dim, hidden});
    w.layers.push_back(std::move(lw));
  }
  w.final_norm = store.load_f32("model.norm.weight", {dim});
  if (!c.tie_word_embeddings || store.contains("lm_head.weight")) {
    if (store.contains("lm_head.weight") || !c.tie_word_embeddings)
      w.lm_head = store.load_f32("lm_head.weight", {c.vocab_size, dim});
  }
  return w;
}

int64_t llama_weights::bytes_read_per_token(const model_config_hf& c) const {
  int64_t floats = static_cast<int64_t>(final_norm.size());
  for (const auto& l : layers)
    floats += l.input_norm.size() + l.qkv.size() + l.qkv_bias.size() + l.o.size() +
              l.post_norm.size() + l.gate_up.size() + l.down.size();
  floats += lm_head.empty() ? c.vocab_size * c.hidden_size : static_cast<int64_t>(lm_head.size());
  return floats * 4;
}

}  // namespace actorllm
