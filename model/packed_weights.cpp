#include "model/packed_weights.hpp"

namespace actorllm {

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

}  // namespace actorllm
