#include "model/llama_model.hpp"

#include <cmath>
#include <stdexcept>

#include "kernels/cpu/ops.hpp"
#include "model/safetensors.hpp"

namespace actorllm {

namespace {

std::vector<float> concat(std::vector<std::vector<float>> parts) {
  std::vector<float> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

llama_weights load_weights(const tensor_store& store, const model_config_hf& c) {
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

}  // namespace

std::vector<float> build_rotary_table(const model_config_hf& c, int64_t max_position) {
  const int64_t half = c.head_dim / 2;
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / c.head_dim);
  const auto& rs = c.rope_scaling;
  if (rs.kind == "linear") {
    for (auto& f : inv_freq) f /= rs.factor;
  } else if (rs.kind == "llama3") {
    const double old_len = static_cast<double>(rs.original_max_position_embeddings);
    const double low_wavelen = old_len / rs.low_freq_factor;
    const double high_wavelen = old_len / rs.high_freq_factor;
    for (auto& f : inv_freq) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= rs.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth =
            (old_len / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        f = (1 - smooth) * f / rs.factor + smooth * f;
      }
    }
  }
  std::vector<float> table(max_position * c.head_dim);
  for (int64_t pos = 0; pos < max_position; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      // float32 angle, as the reference implementations compute it.
      const float angle = static_cast<float>(pos) * static_cast<float>(inv_freq[i]);
      table[pos * c.head_dim + i] = std::cos(angle);
      table[pos * c.head_dim + half + i] = std::sin(angle);
    }
  }
  return table;
}

int64_t llama_weights::bytes_read_per_token(const model_config_hf& c) const {
  int64_t floats = static_cast<int64_t>(final_norm.size());
  for (const auto& l : layers)
    floats += l.input_norm.size() + l.qkv.size() + l.qkv_bias.size() + l.o.size() +
              l.post_norm.size() + l.gate_up.size() + l.down.size();
  floats += lm_head.empty() ? c.vocab_size * c.hidden_size : static_cast<int64_t>(lm_head.size());
  return floats * 4;
}

namespace {

/// Rows [first, first + count) of a row-major (rows, cols) matrix.
std::vector<float> rows_of(const std::vector<float>& m, int64_t cols, int64_t first,
                           int64_t count) {
  return {m.begin() + first * cols, m.begin() + (first + count) * cols};
}

/// Columns [first, first + count) of a row-major (rows, cols) matrix.
std::vector<float> cols_of(const std::vector<float>& m, int64_t cols, int64_t first,
                           int64_t count) {
  std::vector<float> out;
  for (int64_t r = 0; r < static_cast<int64_t>(m.size()) / cols; ++r)
    out.insert(out.end(), m.begin() + r * cols + first, m.begin() + r * cols + first + count);
  return out;
}

std::vector<float> concat_parts(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

/// Keeps this rank's heads, KV heads and MLP columns; `c` becomes the shard's view.
void shard_weights(llama_weights& w, model_config_hf& c, tp_shard shard) {
  const int64_t n = shard.size, r = shard.rank, dim = c.hidden_size;
  if (c.num_heads % n || c.num_kv_heads % n || c.intermediate_size % n)
    throw std::runtime_error(
        "--tensor-parallel-size " + std::to_string(n) + " must divide the heads (" +
        std::to_string(c.num_heads) + "), KV heads (" + std::to_string(c.num_kv_heads) +
        ") and intermediate size (" + std::to_string(c.intermediate_size) + ")");
  const int64_t q = c.q_size(), kv = c.kv_size();
  const int64_t q_local = q / n, kv_local = kv / n, hidden = c.intermediate_size,
                hidden_local = hidden / n;
  for (auto& l : w.layers) {
    l.qkv = concat_parts({rows_of(l.qkv, dim, r * q_local, q_local),
                          rows_of(l.qkv, dim, q + r * kv_local, kv_local),
                          rows_of(l.qkv, dim, q + kv + r * kv_local, kv_local)});
    if (!l.qkv_bias.empty())
      l.qkv_bias = concat_parts({rows_of(l.qkv_bias, 1, r * q_local, q_local),
                                 rows_of(l.qkv_bias, 1, q + r * kv_local, kv_local),
                                 rows_of(l.qkv_bias, 1, q + kv + r * kv_local, kv_local)});
    l.o = cols_of(l.o, q, r * q_local, q_local);
    l.gate_up = concat_parts({rows_of(l.gate_up, dim, r * hidden_local, hidden_local),
                              rows_of(l.gate_up, dim, hidden + r * hidden_local, hidden_local)});
    l.down = cols_of(l.down, hidden, r * hidden_local, hidden_local);
  }
  c.num_heads /= n;
  c.num_kv_heads /= n;
  c.intermediate_size /= n;
}

}  // namespace

llama_model::llama_model(const std::filesystem::path& model_dir, tp_shard shard)
    : config_(load_model_config(model_dir)), shard_(shard) {
  const tensor_store store(model_dir);
  weights_ = load_weights(store, config_);
  weights_.cos_sin = build_rotary_table(config_, config_.max_position_embeddings);
  if (shard.size > 1) shard_weights(weights_, config_, shard);
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
  std::call_once(packed_->once, [this] {
    const auto& c = config_;
    const int64_t dim = c.hidden_size, q_size = c.q_size();
    auto p = std::make_unique<packed_llama_weights>();
    for (const auto& w : weights_.layers) {
      p->layers.push_back({cpu::pack_matrix(w.qkv.data(), q_size + 2 * c.kv_size(), dim),
                           cpu::pack_matrix(w.o.data(), dim, q_size),
                           cpu::pack_matrix(w.gate_up.data(), 2 * c.intermediate_size, dim),
                           cpu::pack_matrix(w.down.data(), dim, c.intermediate_size)});
    }
    p->lm_head = cpu::pack_matrix(weights_.head().data(), c.vocab_size, dim);
    packed_->weights = std::move(p);
  });
  return packed_->weights.get();
}

void llama_model::project(const float* x, const std::vector<float>& w, const cpu::packed_matrix* pw,
                          const float* bias, int64_t n, int64_t in, int64_t out, float* y) {
  if (pw && n <= max_packed_rows)
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
  if (pl && n <= max_packed_rows && q_size % panel == 0 && kv_size % panel == 0)
    return cpu::linear_packed_split(x, pl->qkv, bias, n, parts);
  // One GEMM per part, each over its rows of the fused weight.
  int64_t first = 0;
  for (const auto& part : parts) {
    cpu::linear(x, w.qkv.data() + first * dim, bias ? bias + first : nullptr, n, dim,
                part.num_features, part.dst);
    first += part.num_features;
  }
}

void llama_model::forward(const forward_batch& batch, kv_cache& cache, forward_workspace& ws_,
                          std::vector<float>& logits) const {
  const auto& c = config_;
  const int64_t n = batch.num_tokens();
  const int64_t dim = c.hidden_size, q_size = c.q_size();
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  ensure_workspace(ws_, n);
  const packed_llama_weights* packs = packed();
  float* x = ws_.x.data();                // (n, dim)
  float* residual = ws_.residual.data();  // (n, dim)

  cpu::embedding(weights_.embed.data(), batch.token_ids.data(), n, dim, residual);
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
    cpu::rotary_embedding(batch.positions.data(), ws_.q.data(), ws_.k.data(), n, c.num_heads,
                          c.num_kv_heads, c.head_dim, weights_.cos_sin.data(), c.head_dim, true);
    auto attend = [&](auto* k_cache, auto* v_cache) {
      cpu::reshape_and_cache(ws_.k.data(), ws_.v.data(), k_cache, v_cache,
                             batch.slot_mapping.data(), n, c.num_kv_heads, c.head_dim,
                             cache.shape().block_size);
      cpu::paged_attention(ws_.q.data(), k_cache, v_cache, paged, c.num_heads, c.num_kv_heads,
                           c.head_dim, cache.shape().block_size, scale, ws_.attn.data());
    };
    if (cache.shape().dtype == kv_cache_dtype::float16)
      attend(cache.k<half>(l), cache.v<half>(l));
    else
      attend(cache.k<float>(l), cache.v<float>(l));
    project(ws_.attn.data(), w.o, pl ? &pl->o : nullptr, nullptr, n, q_size, dim, x);
    if (ws_.all_reduce) ws_.all_reduce->sum(ws_.tp_rank, x, n * dim);  // partial over my heads
    cpu::fused_add_rms_norm(x, residual, w.post_norm.data(), n, dim, eps);
    project(x, w.gate_up, pl ? &pl->gate_up : nullptr, nullptr, n, dim, 2 * c.intermediate_size,
            ws_.gate_up.data());
    cpu::silu_and_mul(ws_.gate_up.data(), n, c.intermediate_size, ws_.act.data());
    project(ws_.act.data(), w.down, pl ? &pl->down : nullptr, nullptr, n, c.intermediate_size, dim,
            x);
    if (ws_.all_reduce) ws_.all_reduce->sum(ws_.tp_rank, x, n * dim);  // partial over my columns
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
}

}  // namespace actorllm
