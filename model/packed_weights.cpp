#include "model/packed_weights.hpp"

#include <string>

namespace actorllm {

namespace {

/// The checkpoint tensor `name` as rows to pack, after checking its shape.
cpu::matrix_rows rows_of(const tensor_store& store, const std::string& name, int64_t rows,
                         int64_t cols) {
  const tensor_view& view = store.get(name);
  if (view.shape != std::vector<int64_t>{rows, cols}) {
    std::string shape;
    for (int64_t d : view.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw std::runtime_error("tensor '" + name + "' has shape [" + shape + "], expected [" +
                             std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  return {view.data, source_format(view.dtype), rows};
}

}  // namespace

cpu::weight_format source_format(tensor_dtype dtype) {
  switch (dtype) {
    case tensor_dtype::f16:
      return cpu::weight_format::f16;
    case tensor_dtype::bf16:
      return cpu::weight_format::bf16;
    case tensor_dtype::f32:
      break;
  }
  return cpu::weight_format::f32;
}

int64_t packed_llama_weights::bytes() const {
  int64_t total = lm_head.bytes() + embed.bytes();
  for (const auto& l : layers)
    total += l.qkv.bytes() + l.o.bytes() + l.gate_up.bytes() + l.down.bytes();
  return total;
}

std::unique_ptr<packed_llama_weights> pack_llama_weights(const llama_weights& weights,
                                                         const model_config_hf& c) {
  const int64_t dim = c.hidden_size, q_size = c.q_size();
  auto p = std::make_unique<packed_llama_weights>();
  for (const auto& w : weights.layers) {
    packed_llama_weights::layer layer{cpu::pack_matrix(w.qkv.data(), q_size + 2 * c.kv_size(), dim),
                                      cpu::pack_matrix(w.o.data(), dim, q_size),
                                      {},
                                      {}};
    if (!w.sparse()) {  // experts run through cpu::linear, on their gathered tokens
      layer.gate_up = cpu::pack_matrix(w.gate_up.data(), 2 * c.intermediate_size, dim);
      layer.down = cpu::pack_matrix(w.down.data(), dim, c.intermediate_size);
    }
    p->layers.push_back(std::move(layer));
  }
  p->lm_head = cpu::pack_matrix(weights.head().data(), c.vocab_size, dim);
  return p;
}

std::unique_ptr<packed_llama_weights> load_packed_llama_weights(const tensor_store& store,
                                                                const model_config_hf& c,
                                                                cpu::weight_format format) {
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  auto pack = [&](std::initializer_list<cpu::matrix_rows> parts, int64_t in) {
    return cpu::pack_matrix({parts.begin(), parts.size()}, in, format);
  };
  auto p = std::make_unique<packed_llama_weights>();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string a = "model.layers." + std::to_string(l) + ".self_attn.";
    const std::string m = "model.layers." + std::to_string(l) + ".mlp.";
    packed_llama_weights::layer layer;
    // Phi-3 ships q, k and v fused already, and gate and up, in our order.
    layer.qkv = store.contains(a + "qkv_proj.weight")
                    ? pack({rows_of(store, a + "qkv_proj.weight", q + 2 * kv, dim)}, dim)
                    : pack({rows_of(store, a + "q_proj.weight", q, dim),
                            rows_of(store, a + "k_proj.weight", kv, dim),
                            rows_of(store, a + "v_proj.weight", kv, dim)},
                           dim);
    layer.o = pack({rows_of(store, a + "o_proj.weight", dim, q)}, q);
    layer.gate_up = store.contains(m + "gate_up_proj.weight")
                        ? pack({rows_of(store, m + "gate_up_proj.weight", 2 * hidden, dim)}, dim)
                        : pack({rows_of(store, m + "gate_proj.weight", hidden, dim),
                                rows_of(store, m + "up_proj.weight", hidden, dim)},
                               dim);
    layer.down = pack({rows_of(store, m + "down_proj.weight", dim, hidden)}, hidden);
    p->layers.push_back(std::move(layer));
  }
  const auto embed = rows_of(store, "model.embed_tokens.weight", c.vocab_size, dim);
  if (store.contains("lm_head.weight") || !c.tie_word_embeddings) {
    p->lm_head = pack({rows_of(store, "lm_head.weight", c.vocab_size, dim)}, dim);
    p->embed = pack({embed}, dim);
  } else {
    p->lm_head = pack({embed}, dim);
  }
  return p;
}

}  // namespace actorllm
