#include "model/llama_model.hpp"

#include <malloc.h>

#include <cmath>

#include "kernels/cpu/ops.hpp"
#include "model/moe_layer.hpp"
#include "model/rotary_table.hpp"
#include "model/safetensors.hpp"

namespace actorllm {

namespace {

/// Why this model must keep float32 weights; empty when packed panels can be its only copy.
std::string why_float32_only(const model_config_hf& c, tp_shard shard) {
  if (c.moe.num_experts > 0) return "16-bit and int8 weights do not cover experts yet";
  if (shard.size > 1) return "tensor parallelism shards float32 weights only";
  if (!cpu::packed_linear_supported()) return "this CPU lacks AVX2, FMA or F16C";
  return "";
}

}  // namespace

llama_model::llama_model(const std::filesystem::path& model_dir, tp_shard shard,
                         const weight_options& options)
    : config_(load_model_config(model_dir)), shard_(shard) {
  const checkpoint_quantization quantized =
      read_checkpoint_quantization(config_.quantization_config);
  const tensor_store store(model_dir);
  if (shard.size > 1 && config_.moe.num_experts > 0)
    throw std::runtime_error(config_.architecture +
                             ": tensor parallelism over experts is not supported yet "
                             "(--tensor-parallel-size 1, or several replicas)");
  storage_ =
      choose_weight_format(options, source_format(store.get("model.embed_tokens.weight").dtype),
                           why_float32_only(config_, shard), quantized);
  // Packed panels as the only copy: made from the mapped file, which is unmapped when the
  // store goes at the end of this constructor.
  weights_ = load_llama_weights(store, config_, /*with_matrices=*/!packed_only());
  if (packed_only()) {
    std::call_once(packed_->once, [&] {
      packed_->weights = load_packed_llama_weights(store, config_, storage_.format, quantized);
    });
    // Decoding and quantizing at load free tens of megabytes of temporaries (a matrix's codes,
    // one byte a weight) that glibc keeps in its heap once its mmap threshold has risen:
    // handed back, so that the resident memory is the panels'.
    malloc_trim(0);
  }
  weights_.rotary = build_rotary_table(config_, config_.max_context());
  weights_.local_rotary = build_local_rotary_table(config_, config_.max_context());
  if (shard.size > 1) shard_llama_weights(weights_, config_, shard);
}

int64_t llama_model::bytes_read_per_token() const {
  int64_t bytes = weights_.bytes_read_per_token(config_);
  if (packed_only()) bytes += packed_->weights->bytes() - packed_->weights->embed.bytes();
  return bytes;
}

int64_t llama_model::num_weights_read_per_token() const {
  int64_t n = weights_.bytes_read_per_token(config_) / 4;
  if (!packed_only()) return n;
  const auto& p = *packed_->weights;
  auto count = [](const cpu::packed_matrix& m) { return m.out_features * m.in_features; };
  for (const auto& l : p.layers) n += count(l.qkv) + count(l.o) + count(l.gate_up) + count(l.down);
  return n + count(p.lm_head);
}

kv_cache_shape llama_model::cache_shape(int64_t num_blocks, int64_t block_size,
                                        kv_cache_dtype dtype) const {
  return {config_.num_layers,   num_blocks,       block_size,
          config_.num_kv_heads, config_.head_dim, dtype};
}

void llama_model::ensure_workspace(forward_workspace& ws_, int64_t n) const {
  if (n <= ws_.capacity) return;
  const auto& c = config_;
  ws_.capacity = n;
  ws_.x.resize(n * c.hidden_size);
  ws_.residual.resize(n * c.hidden_size);
  ws_.q.resize(n * c.q_size());
  ws_.k.resize(n * c.kv_size());
  ws_.v.resize(n * c.kv_size());
  ws_.attn.resize(n * c.q_size());
  ws_.gate_up.resize(n * 2 * c.intermediate_size);
  ws_.act.resize(n * c.intermediate_size);
  ws_.last.resize(n * c.hidden_size);
}

namespace {

/// Batches of up to this many rows run on packed weights: there OpenBLAS's copy of the
/// weights on every call costs more than its kernel saves (110M shapes, 2 cores: 2x at 8
/// rows, 1.4x at 32, 1.15x at 64, even at 128; above, OpenBLAS is as fast or up to 10 %
/// faster).
constexpr int64_t max_packed_rows = 96;

}  // namespace

const packed_llama_weights* llama_model::packed() const {
  if (!cpu::packed_linear_supported()) return nullptr;
  std::call_once(packed_->once,
                 [this] { packed_->weights = pack_llama_weights(weights_, config_); });
  return packed_->weights.get();
}

void llama_model::project(const float* x, const std::vector<float>& w, const cpu::packed_matrix* pw,
                          const float* bias, int64_t n, int64_t in, int64_t out, float* y) {
  // Empty float32 weights: the panels are the only copy, for every batch size.
  if (pw && (n <= max_packed_rows || w.empty()))
    cpu::linear_packed(x, *pw, bias, n, y);
  else
    cpu::linear(x, w.data(), bias, n, in, out, y);
}

void llama_model::project_qkv(const float* x, const llama_layer_weights& w,
                              const packed_llama_weights::layer* pl, int64_t n,
                              forward_workspace& ws) const {
  const auto& c = config_;
  const int64_t dim = c.hidden_size, q_size = c.q_size(), kv_size = c.kv_size();
  const float* bias = w.qkv_bias.empty() ? nullptr : w.qkv_bias.data();
  const cpu::output_slice parts[] = {
      {q_size, ws.q.data()}, {kv_size, ws.k.data()}, {kv_size, ws.v.data()}};
  constexpr int64_t panel = cpu::packed_matrix::panel_width;
  if (pl &&
      ((n <= max_packed_rows && q_size % panel == 0 && kv_size % panel == 0) || w.qkv.empty()))
    return cpu::linear_packed_split(x, pl->qkv, bias, n, parts);
  // One GEMM per part, each over its rows of the fused weight.
  int64_t first = 0;
  for (const auto& part : parts) {
    cpu::linear(x, w.qkv.data() + first * dim, bias ? bias + first : nullptr, n, dim,
                part.num_features, part.dst);
    first += part.num_features;
  }
}

void llama_model::rotate(const forward_batch& batch, int64_t layer, forward_workspace& ws) const {
  const auto& c = config_;
  const bool local = c.layer_sliding_window[layer] > 0 && !weights_.local_rotary.cos_sin.empty();
  const rotary_table& table = local ? weights_.local_rotary : weights_.rotary;
  const int32_t* positions = batch.positions.data();
  if (table.long_offset > 0) {
    // LongRoPE: a sequence longer than the original context reads the long factors' rows.
    ws.rope_positions.assign(batch.positions.begin(), batch.positions.end());
    for (int64_t s = 0; s < batch.num_seqs(); ++s)
      if (batch.seq_lens[s] > table.long_offset)
        for (int32_t t = batch.query_start_loc[s]; t < batch.query_start_loc[s + 1]; ++t)
          ws.rope_positions[t] += static_cast<int32_t>(table.long_offset);
    positions = ws.rope_positions.data();
  }
  cpu::rotary_embedding(positions, ws.q.data(), ws.k.data(), batch.num_tokens(), c.num_heads,
                        c.num_kv_heads, c.head_dim, table.cos_sin.data(), c.head_dim, true);
}

void llama_model::add_adapters(const forward_batch& batch, int64_t layer, lora_target target,
                               const float* x, int64_t in, float* y, int64_t out, int64_t y_stride,
                               forward_workspace& ws) const {
  if (batch.adapters.empty()) return;
  ws.lora_pairs.clear();
  for (const lora_adapter* adapter : batch.adapters) {
    const auto& pair = adapter->layers.at(layer)[static_cast<size_t>(target)];
    ws.lora_pairs.push_back(
        pair ? cpu::lora_weights{pair->a.data(), pair->b_t.data(), adapter->rank, adapter->scaling}
             : cpu::lora_weights{});
  }
  cpu::add_lora(x, batch.num_tokens(), in, y, out, y_stride, batch.token_adapters, ws.lora_pairs,
                ws.lora_scratch);
}

void llama_model::feed_forward(const forward_batch& batch, int64_t layer,
                               const packed_llama_weights::layer* pl, forward_workspace& ws,
                               float* x) const {
  const auto& c = config_;
  const auto& w = weights_.layers[layer];
  const int64_t n = batch.num_tokens();
  if (w.sparse()) {
    const int64_t size = n * c.hidden_size;
    if (static_cast<int64_t>(ws.moe.result.size()) < size) ws.moe.result.resize(size);
    moe_forward(x, n, w.moe, c, ws.moe, ws.moe.result.data());
    std::copy(ws.moe.result.begin(), ws.moe.result.begin() + size, x);
    return;
  }
  const int64_t dim = c.hidden_size;
  const int64_t hidden = c.intermediate_size;
  project(x, w.gate_up, pl ? &pl->gate_up : nullptr, nullptr, n, dim, 2 * hidden,
          ws.gate_up.data());
  add_adapters(batch, layer, lora_target::gate_proj, x, dim, ws.gate_up.data(), hidden, 2 * hidden,
               ws);
  add_adapters(batch, layer, lora_target::up_proj, x, dim, ws.gate_up.data() + hidden, hidden,
               2 * hidden, ws);
  if (c.activation == hidden_activation::gelu_tanh)
    cpu::gelu_tanh_and_mul(ws.gate_up.data(), n, c.intermediate_size, ws.act.data());
  else
    cpu::silu_and_mul(ws.gate_up.data(), n, c.intermediate_size, ws.act.data());
  project(ws.act.data(), w.down, pl ? &pl->down : nullptr, nullptr, n, hidden, dim, x);
  add_adapters(batch, layer, lora_target::down_proj, ws.act.data(), hidden, x, dim, dim, ws);
}

void llama_model::forward(const forward_batch& batch, kv_cache& cache, forward_workspace& ws_,
                          std::vector<float>& logits, std::vector<float>* hidden) const {
  const auto& c = config_;
  const int64_t n = batch.num_tokens();
  const int64_t dim = c.hidden_size, q_size = c.q_size();
  const float eps = static_cast<float>(c.rms_norm_eps);
  ensure_workspace(ws_, n);
  if (!batch.adapters.empty() && (shard_.size > 1 || c.moe.num_experts > 0))
    throw std::invalid_argument(
        "LoRA adapters apply to dense models on one shard (no tensor parallelism, no experts)");
  const packed_llama_weights* packs = packed();
  float* x = ws_.x.data();                // (n, dim)
  float* residual = ws_.residual.data();  // (n, dim)

  if (weights_.embed.empty())  // the table's only copy is packed
    cpu::gather_rows(packs->embedding_table(), batch.token_ids.data(), n, residual);
  else
    cpu::embedding(weights_.embed.data(), batch.token_ids.data(), n, dim, residual);
  if (c.embedding_multiplier != 1.0) {
    const auto multiplier = static_cast<float>(c.embedding_multiplier);  // in float32, as HF
    for (int64_t i = 0; i < n * dim; ++i) residual[i] *= multiplier;
  }
  std::fill(x, x + n * dim, 0.0f);
  const cpu::paged_batch paged{batch.query_start_loc.data(), batch.seq_lens.data(),
                               batch.block_tables.data(), batch.num_seqs(),
                               batch.max_blocks_per_seq};

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const auto& w = weights_.layers[l];
    // x holds the previous layer's output; fold it into the residual and normalise.
    cpu::fused_add_rms_norm(x, residual, w.input_norm.data(), n, dim, eps);
    const auto* pl = packs ? &packs->layers[l] : nullptr;
    project_qkv(x, w, pl, n, ws_);
    const int64_t kv_size = c.kv_size();
    add_adapters(batch, l, lora_target::q_proj, x, dim, ws_.q.data(), q_size, q_size, ws_);
    add_adapters(batch, l, lora_target::k_proj, x, dim, ws_.k.data(), kv_size, kv_size, ws_);
    add_adapters(batch, l, lora_target::v_proj, x, dim, ws_.v.data(), kv_size, kv_size, ws_);
    if (!w.q_norm.empty()) {
      // Qwen3, Gemma 3: each head of q and k normalised before the rotation.
      cpu::rms_norm(ws_.q.data(), w.q_norm.data(), n * c.num_heads, c.head_dim, eps, ws_.q.data());
      cpu::rms_norm(ws_.k.data(), w.k_norm.data(), n * c.num_kv_heads, c.head_dim, eps,
                    ws_.k.data());
    }
    rotate(batch, l, ws_);
    const cpu::attention_options attention{c.attention_softmax_scale(), c.layer_sliding_window[l],
                                           static_cast<float>(c.attn_logit_softcapping)};
    auto attend = [&](auto* k_cache, auto* v_cache) {
      cpu::reshape_and_cache(ws_.k.data(), ws_.v.data(), k_cache, v_cache,
                             batch.slot_mapping.data(), n, c.num_kv_heads, c.head_dim,
                             cache.shape().block_size);
      cpu::paged_attention(ws_.q.data(), k_cache, v_cache, paged, c.num_heads, c.num_kv_heads,
                           c.head_dim, cache.shape().block_size, attention, ws_.attn.data());
    };
    if (cache.shape().dtype == kv_cache_dtype::float16)
      attend(cache.k<half>(l), cache.v<half>(l));
    else if (cache.shape().dtype == kv_cache_dtype::float8)
      attend(cache.k<float8_e4m3>(l), cache.v<float8_e4m3>(l));
    else
      attend(cache.k<float>(l), cache.v<float>(l));
    project(ws_.attn.data(), w.o, pl ? &pl->o : nullptr, nullptr, n, q_size, dim, x);
    add_adapters(batch, l, lora_target::o_proj, ws_.attn.data(), q_size, x, dim, dim, ws_);
    if (ws_.all_reduce) ws_.all_reduce->sum(ws_.tp_rank, x, n * dim);  // partial over my heads
    if (!w.attn_out_norm.empty()) cpu::rms_norm(x, w.attn_out_norm.data(), n, dim, eps, x);
    cpu::fused_add_rms_norm(x, residual, w.post_norm.data(), n, dim, eps);
    feed_forward(batch, l, pl, ws_, x);
    if (ws_.all_reduce) ws_.all_reduce->sum(ws_.tp_rank, x, n * dim);  // partial over my columns
    if (!w.mlp_out_norm.empty()) cpu::rms_norm(x, w.mlp_out_norm.data(), n, dim, eps, x);
  }

  if (hidden) {
    // Embeddings: the final hidden states (after the last norm) of the rows asked for.
    const auto num_hidden = static_cast<int64_t>(batch.hidden_indices.size());
    hidden->resize(num_hidden * dim);
    for (int64_t i = 0; i < num_hidden; ++i) {
      const int64_t t = batch.hidden_indices[i];
      for (int64_t d = 0; d < dim; ++d)
        (*hidden)[i * dim + d] = x[t * dim + d] + residual[t * dim + d];
    }
    cpu::rms_norm(hidden->data(), weights_.final_norm.data(), num_hidden, dim, eps, hidden->data());
  }
  // Only the rows that sample need the final norm and the LM head.
  const int64_t num_logits = static_cast<int64_t>(batch.logits_indices.size());
  for (int64_t i = 0; i < num_logits; ++i) {
    const int64_t t = batch.logits_indices[i];
    for (int64_t d = 0; d < dim; ++d)
      ws_.last[i * dim + d] = x[t * dim + d] + residual[t * dim + d];
  }
  cpu::rms_norm(ws_.last.data(), weights_.final_norm.data(), num_logits, dim, eps, ws_.last.data());
  logits.resize(num_logits * c.vocab_size);
  if (num_logits > 0)
    project(ws_.last.data(), weights_.head(), packs ? &packs->lm_head : nullptr, nullptr,
            num_logits, dim, c.vocab_size, logits.data());
  if (c.final_logit_softcapping > 0)
    cpu::softcap(logits.data(), num_logits * c.vocab_size,
                 static_cast<float>(c.final_logit_softcapping));
}

}  // namespace actorllm
