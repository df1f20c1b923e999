// The step order and every op's arguments follow the shared forward (model/decoder_forward.cpp);
// a change there is a change here.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/feed_forward.cuh"
#include "kernels/cuda/llama_runner.cuh"
#include "kernels/cuda/llama_runner_helpers.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/paged_attention_decode.cuh"
#include "kernels/cuda/qkv_to_cache.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/silu_and_mul.cuh"

namespace actorllm::cuda {

using runner_detail::require;
using runner_detail::reserve;
using runner_detail::upload_async;

namespace {

const float* need(const float* p, const std::string& name) {
  require(p != nullptr, "missing weight " + name);
  return p;
}

const host_tensor& need(const host_tensor& t, const std::string& name) {
  require(!t.empty(), "missing weight " + name);
  return t;
}

std::string layer_name(int64_t l, const char* what) {
  return "layers." + std::to_string(l) + "." + what;
}

}  // namespace

void llama_runner_config::validate() const {
  require(hidden_size > 0 && intermediate_size > 0 && num_layers > 0 && num_heads > 0 &&
              num_kv_heads > 0 && head_dim > 0 && vocab_size > 0 && max_position > 0,
          "every size of the config must be positive");
  require(num_heads % num_kv_heads == 0, "num_heads must be a multiple of num_kv_heads");
  require(head_dim % 2 == 0, "head_dim must be even (rotary halves)");
  require(rms_norm_eps > 0, "rms_norm_eps must be positive");
  require(layer_sliding_window.empty() ||
              static_cast<int64_t>(layer_sliding_window.size()) == num_layers,
          "one sliding window per layer, or none");
  for (int32_t w : layer_sliding_window) require(w >= 0, "a sliding window cannot be negative");
  require(long_rope_offset >= 0 && long_rope_offset < max_position,
          "the long factors' rows must start inside the rotary table");
  require(embedding_multiplier > 0 && attention_scale >= 0,
          "the embedding multiplier must be positive and the attention scale not negative");
  require(attn_logit_softcapping >= 0 && final_logit_softcapping >= 0,
          "a soft-capping cannot be negative");
}

llama_runner::llama_runner(const llama_runner_config& config, const llama_host_weights& w,
                           dtype storage, cudaStream_t stream)
    : config_(config), weights_(storage), stream_(stream), projector_(stream) {
  config_.validate();
  const auto& c = config_;
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t qkv_size = c.q_size() + 2 * c.kv_size();
  require(static_cast<int64_t>(w.layers.size()) == c.num_layers,
          "weights have " + std::to_string(w.layers.size()) + " layers, the config " +
              std::to_string(c.num_layers));
  // Uploaded, and resolved to the device pointer the step uses.
  const auto upload = [&](const std::string& name, const float* host, int64_t size) {
    weights_.upload(name, need(host, name), size);
    return static_cast<const void*>(weights_.get(name));
  };
  weights_.upload("embed", need(w.embed, "embed"), c.vocab_size * dim);
  embed_ = weights_.get("embed");
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const auto& lw = w.layers[l];
    resolved_layer parts;
    parts.input_norm = upload(layer_name(l, "input_norm"), lw.input_norm, dim);
    parts.qkv = upload_linear(layer_name(l, "qkv"), lw.qkv, lw.qkv_quantized, qkv_size, dim);
    if (lw.qkv_bias) parts.qkv_bias = upload(layer_name(l, "qkv_bias"), lw.qkv_bias, qkv_size);
    require((lw.q_norm == nullptr) == (lw.k_norm == nullptr),
            layer_name(l, "q_norm") + " and k_norm come together");
    if (lw.q_norm) {
      parts.q_norm = upload(layer_name(l, "q_norm"), lw.q_norm, c.head_dim);
      parts.k_norm = upload(layer_name(l, "k_norm"), lw.k_norm, c.head_dim);
    }
    parts.o = upload_linear(layer_name(l, "o"), lw.o, lw.o_quantized, dim, c.q_size());
    require((lw.attn_out_norm == nullptr) == (lw.mlp_out_norm == nullptr),
            layer_name(l, "attn_out_norm") + " and mlp_out_norm come together");
    if (lw.attn_out_norm) {
      parts.attn_out_norm = upload(layer_name(l, "attn_out_norm"), lw.attn_out_norm, dim);
      parts.mlp_out_norm = upload(layer_name(l, "mlp_out_norm"), lw.mlp_out_norm, dim);
    }
    parts.post_norm = upload(layer_name(l, "post_norm"), lw.post_norm, dim);
    if (lw.router) {
      require(c.num_experts > 0 && c.moe_top_k > 0 && c.moe_top_k <= c.num_experts && c.route,
              layer_name(l, "router") + " needs num_experts, moe_top_k and route in the config");
      require(static_cast<int64_t>(lw.expert_gate_up.size()) == c.num_experts &&
                  static_cast<int64_t>(lw.expert_down.size()) == c.num_experts &&
                  lw.expert_width > 0,
              layer_name(l, "experts") + ": one gate_up and one down per expert");
      parts.expert_width = lw.expert_width;
      parts.router = upload(layer_name(l, "router"), lw.router, c.num_experts * dim);
      for (int64_t e = 0; e < c.num_experts; ++e) {
        const std::string name = layer_name(l, "experts.") + std::to_string(e);
        parts.gate_up_of.push_back(
            {upload(name + ".gate_up", lw.expert_gate_up[e], 2 * lw.expert_width * dim), {}});
        parts.down_of.push_back(
            {upload(name + ".down", lw.expert_down[e], dim * lw.expert_width), {}});
      }
      if (lw.shared_width > 0) {
        parts.shared_width = lw.shared_width;
        parts.shared_gate_up.dense =
            upload(layer_name(l, "shared.gate_up"), lw.shared_gate_up, 2 * lw.shared_width * dim);
        parts.shared_down.dense =
            upload(layer_name(l, "shared.down"), lw.shared_down, dim * lw.shared_width);
        parts.shared_gate = upload(layer_name(l, "shared.gate"), lw.shared_gate, dim);
      }
    } else {
      parts.gate_up = upload_linear(layer_name(l, "gate_up"), lw.gate_up, lw.gate_up_quantized,
                                    2 * hidden, dim);
      parts.down = upload_linear(layer_name(l, "down"), lw.down, lw.down_quantized, dim, hidden);
    }
    resolved_.push_back(std::move(parts));
  }
  final_norm_ = upload("final_norm", w.final_norm, dim);
  if (!w.lm_head.empty() || !w.lm_head_quantized.empty())
    head_ = upload_linear("lm_head", w.lm_head, w.lm_head_quantized, c.vocab_size, dim);
  else
    head_.dense = embed_;  // tied
  weights_.upload("cos_sin", need(w.cos_sin, "cos_sin"), c.max_position * c.head_dim,
                  /*keep_fp32=*/true);
  cos_sin_ = static_cast<const float*>(weights_.get("cos_sin"));
  if (w.local_cos_sin) {
    weights_.upload("local_cos_sin", w.local_cos_sin, c.max_position * c.head_dim,
                    /*keep_fp32=*/true);
    local_cos_sin_ = static_cast<const float*>(weights_.get("local_cos_sin"));
  }
}

llama_runner::~llama_runner() = default;

linear_weight llama_runner::upload_linear(const std::string& name, const host_tensor& dense,
                                          const quantized_matrix& quantized, int64_t out_features,
                                          int64_t in_features) {
  linear_weight w;
  if (quantized.empty()) {
    weights_.upload(name, need(dense, name), out_features * in_features);
    w.dense = weights_.get(name);
    return w;
  }
  require(quantized.out_features == out_features && quantized.in_features == in_features,
          name + ": quantized as (" + std::to_string(quantized.out_features) + ", " +
              std::to_string(quantized.in_features) + "), the model needs (" +
              std::to_string(out_features) + ", " + std::to_string(in_features) + ")");
  const std::string error = quantized_layout_error(quantized);
  require(error.empty(), name + ": " + error);
  quantized_.push_back(std::make_unique<device_quantized_matrix>(quantized));
  w.quantized = quantized_.back()->view();
  projector_.prepare(w.quantized);
  return w;
}

void llama_runner::linear(const linear_weight& w, const void* x, const void* bias, int64_t n,
                          int64_t in_features, int64_t out_features, void* y) {
  projector_.linear(w, x, bias, n, in_features, out_features, y, weights_.storage());
}

gate_activation llama_runner::activation() const {
  return config_.gelu_tanh ? gate_activation::gelu_tanh : gate_activation::silu;
}

void llama_runner::moe_feed_forward(int64_t l, void* x, int64_t n) {
  const resolved_layer& moe = resolved_[l];
  experts_on_device w;
  w.router = moe.router;
  w.gate_up = moe.gate_up_of.data();
  w.down = moe.down_of.data();
  w.num_experts = config_.num_experts;
  w.top_k = config_.moe_top_k;
  w.width = moe.expert_width;
  w.shared_gate_up = moe.shared_gate_up;
  w.shared_down = moe.shared_down;
  w.shared_width = moe.shared_width;
  w.shared_gate = moe.shared_gate;
  experts_.run(projector_, w, config_.route, activation(), x, n, config_.hidden_size,
               weights_.storage());
}

kv_cache_layout llama_runner::cache_layout(int64_t num_blocks, int64_t block_size,
                                           kv_format format) const {
  kv_cache_layout layout;
  layout.num_layers = config_.num_layers;
  layout.num_blocks = num_blocks;
  layout.block_size = block_size;
  layout.num_kv_heads = config_.num_kv_heads;
  layout.head_dim = config_.head_dim;
  layout.type = weights_.storage();
  layout.format = format;
  return layout;
}

void llama_runner::ensure_workspace(int64_t n) {
  const auto& c = config_;
  const size_t es = static_cast<size_t>(dtype_size(weights_.storage()));
  if (n > ws_.tokens) {
    const size_t rows = static_cast<size_t>(n);
    ws_.x = device_buffer(rows * c.hidden_size * es);
    ws_.residual = device_buffer(rows * c.hidden_size * es);
    ws_.qkv = device_buffer(rows * (c.q_size() + 2 * c.kv_size()) * es);
    ws_.q = device_buffer(rows * c.q_size() * es);
    ws_.attn = device_buffer(rows * c.q_size() * es);
    ws_.gate_up = device_buffer(rows * 2 * c.intermediate_size * es);
    ws_.act = device_buffer(rows * c.intermediate_size * es);
    ws_.last_x = device_buffer(rows * c.hidden_size * es);
    ws_.last_residual = device_buffer(rows * c.hidden_size * es);
    ws_.logits = device_buffer(rows * c.vocab_size * es);
    ws_.logits_f32 = device_buffer(rows * c.vocab_size * sizeof(float));
    ws_.next_tokens = device_buffer(rows * sizeof(int32_t));
    ws_.tokens = n;
  }
}

llama_runner::device_batch llama_runner::stage_batch(const llama_host_batch& b,
                                                     const int32_t* rope_positions) {
  const int64_t n = b.num_tokens, seqs = b.num_seqs;
  const host_array arrays[] = {
      {b.token_ids, static_cast<size_t>(n) * sizeof(int32_t)},
      {rope_positions, static_cast<size_t>(n) * sizeof(int32_t)},
      {b.logits_indices, static_cast<size_t>(b.num_logits) * sizeof(int32_t)},
      {b.query_start_loc, static_cast<size_t>(seqs + 1) * sizeof(int32_t)},
      {b.seq_lens, static_cast<size_t>(seqs) * sizeof(int32_t)},
      {b.block_tables, static_cast<size_t>(seqs * b.max_blocks_per_seq) * sizeof(int32_t)},
      {b.slot_mapping, static_cast<size_t>(n) * sizeof(int64_t)},
  };
  const char* at[std::size(arrays)];
  stage_host_arrays(arrays, std::size(arrays), ws_.batch_staging, ws_.batch, stream_, at);
  return {reinterpret_cast<const int32_t*>(at[0]), reinterpret_cast<const int32_t*>(at[1]),
          reinterpret_cast<const int32_t*>(at[2]), reinterpret_cast<const int32_t*>(at[3]),
          reinterpret_cast<const int32_t*>(at[4]), reinterpret_cast<const int32_t*>(at[5]),
          reinterpret_cast<const int64_t*>(at[6])};
}

float* llama_runner::run(const llama_host_batch& b, device_kv_cache& cache) {
  const auto& c = config_;
  const kv_cache_layout& layout = cache.layout();
  require(layout.num_layers == c.num_layers && layout.num_kv_heads == c.num_kv_heads &&
              layout.head_dim == c.head_dim && layout.type == weights_.storage(),
          "the KV cache layout does not match the model (layers, kv heads, head_dim, dtype)");
  const int64_t n = b.num_tokens, num_seqs = b.num_seqs;
  const int64_t block_size = layout.block_size;
  const auto [max_query_len, max_seq_len] =
      check_host_batch(b, layout.num_blocks, block_size, c.max_position, "llama_runner");

  const int32_t* rope_positions = b.positions;
  if (c.long_rope_offset > 0) {
    // LongRoPE: a sequence past the original context rotates with the long factors' rows.
    rope_positions_.assign(b.positions, b.positions + n);
    for (int64_t s = 0; s < num_seqs; ++s)
      if (b.seq_lens[s] > c.long_rope_offset)
        for (int32_t i = b.query_start_loc[s]; i < b.query_start_loc[s + 1]; ++i) {
          rope_positions_[i] += static_cast<int32_t>(c.long_rope_offset);
          require(rope_positions_[i] < c.max_position, "position outside the long rotary rows");
        }
    rope_positions = rope_positions_.data();
  }
  // Host routing (mixture of experts) waits on the device inside the forward: never captured.
  if (c.num_experts == 0)
    if (const decode_graph_shape shape = decode_graph_shape_of(b, block_size, c.decode_graphs);
        shape.num_seqs > 0 && !uncapturable_.count(shape)) {
      llama_host_batch rotated = b;
      rotated.positions = rope_positions;
      return run_graph(rotated, shape, cache);
    }
  ensure_workspace(n);
  const device_batch batch = stage_batch(b, rope_positions);
  return enqueue(b, batch, max_query_len, max_seq_len, cache);
}

float* llama_runner::enqueue(const llama_host_batch& b, const device_batch& batch,
                             int64_t max_query_len, int64_t max_seq_len, device_kv_cache& cache) {
  const auto& c = config_;
  const dtype t = weights_.storage();
  const int64_t n = b.num_tokens, num_seqs = b.num_seqs, num_logits = b.num_logits;
  const int64_t block_size = cache.layout().block_size;
  const int64_t dim = c.hidden_size, q_size = c.q_size(), kv_size = c.kv_size();
  const int64_t qkv_size = q_size + 2 * kv_size, hidden = c.intermediate_size;
  const size_t es = static_cast<size_t>(dtype_size(t));
  const float eps = c.rms_norm_eps;
  const float scale =
      c.attention_scale > 0 ? c.attention_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  void* x = ws_.x.get();                // (n, dim)
  void* residual = ws_.residual.get();  // (n, dim)
  char* qkv = ws_.qkv.as<char>();       // (n, qkv_size)
  const int32_t* token_ids = batch.token_ids;
  const int32_t* positions = batch.positions;
  const float* cos_sin = cos_sin_;
  const float* local_cos_sin = local_cos_sin_ ? local_cos_sin_ : cos_sin;

  embedding(embed_, token_ids, n, dim, residual, t, stream_, c.vocab_size);
  if (c.embedding_multiplier != 1.0f)
    scale_in_place(residual, n * dim, c.embedding_multiplier, t, stream_);
  CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<size_t>(n * dim) * es, stream_));
  paged_batch paged;
  paged.query_start_loc = batch.query_start_loc;
  paged.seq_lens = batch.seq_lens;
  paged.block_tables = batch.block_tables;
  paged.num_seqs = num_seqs;
  paged.max_blocks_per_seq = b.max_blocks_per_seq;
  paged.num_tokens = n;
  paged.max_query_len = max_query_len;
  paged.max_seq_len = max_seq_len;
  paged.softcap = c.attn_logit_softcapping;
  paged.cache = cache.layout().format;
  // The leading one-token queries run the decode kernels, the rest the prefill kernel.
  paged_split split = split_decode_prefix(paged, b.query_start_loc, b.seq_lens, c.head_dim);
  // A batch of decodes only is sized by the caller's bound (a graph's, past the real lengths).
  if (split.decode.num_seqs == num_seqs) split.decode.max_seq_len = max_seq_len;
  const bool decode_rows = split.decode.num_seqs > 0;
  if (decode_rows)
    reserve(ws_.attention,
            paged_attention_decode_workspace_bytes(split.decode.num_seqs, c.num_heads, c.head_dim,
                                                   split.decode.max_seq_len));

  // What qkv_to_cache reads that no layer changes; each layer sets its table, norms and cache.
  qkv_to_cache_args split_rows;
  split_rows.qkv = qkv;
  split_rows.positions = positions;
  split_rows.eps = eps;
  split_rows.slot_mapping = batch.slot_mapping;
  split_rows.q_out = ws_.q.get();
  split_rows.n = n;
  split_rows.num_heads = c.num_heads;
  split_rows.num_kv_heads = c.num_kv_heads;
  split_rows.head_dim = c.head_dim;
  split_rows.block_size = block_size;

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const resolved_layer& parts = resolved_[l];
    // x holds the previous layer's output; fold it into the residual and normalise.
    fused_add_rms_norm(x, residual, parts.input_norm, n, dim, eps, t, stream_);
    linear(parts.qkv, x, parts.qkv_bias, n, dim, qkv_size, qkv);
    const int32_t window = c.layer_sliding_window.empty() ? 0 : c.layer_sliding_window[l];
    // The step's swaps of this layer's blocks land on the cache's copy stream: wait for them
    // here, not before the forward, so earlier layers compute while later ones still move.
    cache.wait_for_layer(l, stream_);
    // q (normalised, rotated) to its own rows, k (the same) and v straight into the cache.
    split_rows.cos_sin = window > 0 ? local_cos_sin : cos_sin;
    split_rows.q_norm = parts.q_norm;
    split_rows.k_norm = parts.k_norm;
    split_rows.k_cache = cache.k(l);
    split_rows.v_cache = cache.v(l);
    qkv_to_cache(split_rows, t, paged.cache, stream_);
    paged.sliding_window = split.decode.sliding_window = split.prefill.sliding_window = window;
    paged_attention(ws_.q.get(), cache.k(l), cache.v(l), paged, split, c.num_heads, c.num_kv_heads,
                    c.head_dim, block_size, scale, ws_.attn.get(), t, stream_,
                    decode_rows ? ws_.attention.get() : nullptr,
                    decode_rows ? ws_.attention.size() : 0);
    linear(parts.o, ws_.attn.get(), nullptr, n, q_size, dim, x);
    if (c.all_reduce) c.all_reduce(x, n * dim, t, stream_);  // partial over this rank's heads
    if (parts.attn_out_norm) rms_norm(x, parts.attn_out_norm, n, dim, eps, x, t, stream_);
    fused_add_rms_norm(x, residual, parts.post_norm, n, dim, eps, t, stream_);
    if (parts.expert_width > 0)
      moe_feed_forward(l, x, n);
    else
      gated_mlp(projector_, x, n, dim, hidden, parts.gate_up, parts.down, activation(),
                ws_.gate_up.get(), ws_.act.get(), x, t);
    if (c.all_reduce) c.all_reduce(x, n * dim, t, stream_);  // partial over this rank's columns
    if (parts.mlp_out_norm) rms_norm(x, parts.mlp_out_norm, n, dim, eps, x, t, stream_);
  }

  if (num_logits == 0) return ws_.logits_f32.as<float>();
  // Only the rows that sample need the final norm and the LM head: gather x and the residual
  // at logits_indices (a row gather is an embedding lookup into (n, dim)), then
  // last = rms_norm(x + residual) in one fused op.
  const int32_t* logits_indices = batch.logits_indices;
  embedding(x, logits_indices, num_logits, dim, ws_.last_x.get(), t, stream_, n);
  embedding(residual, logits_indices, num_logits, dim, ws_.last_residual.get(), t, stream_, n);
  fused_add_rms_norm(ws_.last_x.get(), ws_.last_residual.get(), final_norm_, num_logits, dim, eps,
                     t, stream_);
  linear(head_, ws_.last_x.get(), nullptr, num_logits, dim, c.vocab_size, ws_.logits.get());
  float* logits = ws_.logits.as<float>();
  if (t != dtype::f32) {
    convert(ws_.logits.get(), t, ws_.logits_f32.get(), dtype::f32, num_logits * c.vocab_size,
            stream_);
    logits = ws_.logits_f32.as<float>();
  }
  // In float32, as the CPU forward caps its float32 logits.
  if (c.final_logit_softcapping > 0)
    softcap_in_place(logits, num_logits * c.vocab_size, c.final_logit_softcapping, stream_);
  return logits;
}

}  // namespace actorllm::cuda
