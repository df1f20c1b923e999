#include "actors/gpu_worker/cuda_weights.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/forward_batch.hpp"
#include "model/llama_model.hpp"
#include "model/llama_weights.hpp"

namespace actorllm {

namespace {

const float* data_or_null(const std::vector<float>& v) {
  return v.empty() ? nullptr : v.data();
}

}  // namespace

std::string cuda_unsupported_feature(const model_config_hf& c) {
  if (c.moe.num_experts > 0) return "mixture-of-experts layers";
  if (std::any_of(c.layer_sliding_window.begin(), c.layer_sliding_window.end(),
                  [](int32_t w) { return w > 0; }))
    return "sliding-window attention";
  if (c.qk_norm) return "per-head q/k norms";
  if (c.sandwich_norms) return "norms after attention and the MLP";
  if (c.activation != hidden_activation::silu) return "GeGLU (gelu_pytorch_tanh)";
  if (c.embedding_multiplier != 1.0) return "scaled embeddings";
  if (c.attention_scale > 0) return "query_pre_attn_scalar";
  if (c.attn_logit_softcapping > 0 || c.final_logit_softcapping > 0) return "logit soft-capping";
  if (c.rope_scaling.kind == "longrope") return "LongRoPE";
  return "";
}

cuda::llama_runner_config runner_config_of(const llama_model& model) {
  const model_config_hf& c = model.config();
  if (const std::string missing = cuda_unsupported_feature(c); !missing.empty())
    throw std::runtime_error(c.architecture + " needs " + missing +
                             ", which the CUDA backend does not run yet: serve it with "
                             "--device cpu");
  cuda::llama_runner_config r;
  r.hidden_size = c.hidden_size;
  r.intermediate_size = c.intermediate_size;
  r.num_layers = c.num_layers;
  r.num_heads = c.num_heads;
  r.num_kv_heads = c.num_kv_heads;
  r.head_dim = c.head_dim;
  r.vocab_size = c.vocab_size;
  r.max_position =
      c.head_dim > 0 ? static_cast<int64_t>(model.weights().cos_sin().size()) / c.head_dim : 0;
  r.rms_norm_eps = static_cast<float>(c.rms_norm_eps);
  return r;
}

cuda::llama_host_weights host_weights_of(const llama_weights& w) {
  cuda::llama_host_weights h;
  h.embed = data_or_null(w.embed);
  for (const auto& l : w.layers) {
    cuda::llama_host_layer hl;
    hl.input_norm = data_or_null(l.input_norm);
    hl.qkv = data_or_null(l.qkv);
    hl.qkv_bias = data_or_null(l.qkv_bias);
    hl.o = data_or_null(l.o);
    hl.post_norm = data_or_null(l.post_norm);
    hl.gate_up = data_or_null(l.gate_up);
    hl.down = data_or_null(l.down);
    h.layers.push_back(hl);
  }
  h.final_norm = data_or_null(w.final_norm);
  h.lm_head = data_or_null(w.lm_head);
  h.cos_sin = data_or_null(w.cos_sin());
  return h;
}

cuda::llama_host_batch host_batch_of(const forward_batch& b) {
  cuda::llama_host_batch h;
  h.token_ids = b.token_ids.data();
  h.positions = b.positions.data();
  h.slot_mapping = b.slot_mapping.data();
  h.query_start_loc = b.query_start_loc.data();
  h.seq_lens = b.seq_lens.data();
  h.block_tables = b.block_tables.data();
  h.logits_indices = b.logits_indices.data();
  h.num_tokens = b.num_tokens();
  h.num_seqs = b.num_seqs();
  h.max_blocks_per_seq = b.max_blocks_per_seq;
  h.num_logits = static_cast<int64_t>(b.logits_indices.size());
  return h;
}

}  // namespace actorllm
