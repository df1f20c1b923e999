#pragma once
/// The Llama forward on one CUDA device: the same steps as actorllm::llama_model::forward
/// (fused qkv and gate_up projections, neox rotary from a (max_position, head_dim) table,
/// residual through fused_add_rms_norm, final norm only on the rows that sample, LM head
/// tied to the embedding unless given), over the paged device KV cache. Weights are uploaded
/// once from the host (float32, or the embedding table and dense projections in 16 bits as a
/// checkpoint ships them) and stored in one dtype (f32, f16 or bf16); every op accumulates in
/// fp32. C++17, free of CAF and Boost: a loader fills llama_host_weights.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/decode_graphs.hpp"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/feed_forward.cuh"
#include "kernels/cuda/host_batch.hpp"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/projector.cuh"
#include "kernels/cuda/quantized_linear.cuh"
#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/weight_store.cuh"

namespace actorllm::cuda {

struct llama_runner_config {
  int64_t hidden_size = 0;        ///< dim
  int64_t intermediate_size = 0;  ///< hidden of the MLP
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position = 0;  ///< rows of the rotary table
  float rms_norm_eps = 1e-5f;
  /// Each layer's sliding window (paged_batch::sliding_window; 0: full attention), or empty:
  /// every layer attends to the whole context.
  std::vector<int32_t> layer_sliding_window;
  /// LongRoPE (Phi-3): the rotary table holds the short factors' rows, then the long ones'
  /// from this row on; a sequence longer than it reads position + long_rope_offset, as the CPU
  /// forward does. 0: one set of rows.
  int64_t long_rope_offset = 0;
  /// Gemma: the embedding rows are multiplied by this (sqrt(hidden_size)); 1 elsewhere.
  float embedding_multiplier = 1.0f;
  /// The softmax scale of attention; 0: 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar's).
  float attention_scale = 0.0f;
  /// The MLP's gate activation: SiLU, or GELU's tanh approximation (GeGLU, Gemma).
  bool gelu_tanh = false;
  /// Gemma 2's soft-capping (cap * tanh(x / cap)) of the attention scores and of the final
  /// logits; 0: off.
  float attn_logit_softcapping = 0.0f;
  float final_logit_softcapping = 0.0f;
  /// Mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE): experts per sparse layer, experts per
  /// token, and the routing, made on the host from the router's float32 logits (n,
  /// num_experts) into experts (n, top_k) and their weights (n, top_k), row by row as the CPU
  /// layer routes. num_experts 0: every layer is dense.
  int64_t num_experts = 0;
  int64_t moe_top_k = 0;
  std::function<void(const float* logits, int64_t n, int32_t* experts, float* weights)> route;

  /// Tensor parallelism: sums a row-parallel projection's partial output (data(n) of type t)
  /// over the ranks, in place, on `stream`; called after the o and the down projections (and
  /// the experts), as the CPU forward sums. Null: one rank. Every rank's runner calls it in
  /// the same order (nccl_comm::all_reduce_sum).
  std::function<void(void* data, int64_t n, dtype t, cudaStream_t stream)> all_reduce;

  /// CUDA graphs for decode steps (decode_graphs.hpp); max_batch 0: every step eager
  /// (--enforce-eager), as the default here.
  decode_graph_limits decode_graphs;

  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
  /// Throws std::invalid_argument on a zero or inconsistent field.
  void validate() const;
};

/// Host weights of one layer, row-major, float32 unless a host_tensor says otherwise; the
/// runner copies them on construction.
struct llama_host_layer {
  const float* input_norm = nullptr;  // (dim)
  host_tensor qkv;                    // (q_size + 2 * kv_size, dim)  q, k, v rows fused
  const float* qkv_bias = nullptr;    // (q_size + 2 * kv_size) or null
  // Per-head RMSNorm of q and of k before the rotation (Qwen3): both (head_dim), or both null.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  host_tensor o;  // (dim, q_size)
  // Gemma's sandwich norms: RMSNorm of the attention's output and of the MLP's output before
  // each joins the residual (both (dim), or both null); post_norm is then the pre-MLP norm.
  const float* attn_out_norm = nullptr;
  const float* mlp_out_norm = nullptr;
  const float* post_norm = nullptr;  // (dim)
  host_tensor gate_up;               // (2 * hidden, dim)  gate rows then up rows
  host_tensor down;                  // (dim, hidden)
  // A sparse layer instead of gate_up and down: the router (num_experts, dim), each expert's
  // gate_up (2 * expert_width, dim) and down (dim, expert_width), and Qwen2-MoE's shared expert
  // (shared_width 0: none) with its gate (dim).
  const float* router = nullptr;
  int64_t expert_width = 0;
  std::vector<const float*> expert_gate_up, expert_down;
  int64_t shared_width = 0;
  const float* shared_gate_up = nullptr;
  const float* shared_down = nullptr;
  const float* shared_gate = nullptr;
  // Projections that stay quantized on the device (host pointers; codes null: none). Where
  // one is set, the dense tensor of the same matrix above is not read and may be empty.
  quantized_matrix qkv_quantized, o_quantized, gate_up_quantized, down_quantized;
};

struct llama_host_weights {
  host_tensor embed;  // (vocab, dim)
  std::vector<llama_host_layer> layers;
  const float* final_norm = nullptr;  // (dim)
  host_tensor lm_head;                // (vocab, dim); empty when tied to embed
  const float* cos_sin = nullptr;     // (max_position, head_dim) cosines then sines, kept fp32
  /// Gemma 3: the windowed layers' own table (their RoPE base), of cos_sin's shape; null:
  /// every layer rotates with cos_sin.
  const float* local_cos_sin = nullptr;
  /// An untied LM head that stays quantized on the device (codes null: none; lm_head unread).
  quantized_matrix lm_head_quantized;
};

/// Allowed-token bitmasks of some logits rows, on the host (structured output).
struct host_token_masks {
  const int32_t* rows = nullptr;    ///< (num_masked) logits rows, each below num_logits
  const uint32_t* words = nullptr;  ///< (num_masked, words_per_row)
  int64_t num_masked = 0;
  int64_t words_per_row = 0;
};

/// One step's draws on the host (forward_sample), laid out as sample_rows takes them.
struct host_draws {
  const row_sampling* rows = nullptr;     ///< (num_rows), one per logits row
  const int32_t* edit_offsets = nullptr;  ///< (num_rows + 1), [0] = 0, non-decreasing
  const logit_edit* edits = nullptr;      ///< (edit_offsets[num_rows])
  int64_t num_rows = 0;
};

class llama_runner {
 public:
  /// Uploads the weights in `storage` (the rotary table stays fp32) on the current device.
  /// Work runs on `stream` (null: the legacy default stream).
  llama_runner(const llama_runner_config& config, const llama_host_weights& weights, dtype storage,
               cudaStream_t stream = nullptr);
  ~llama_runner();
  llama_runner(const llama_runner&) = delete;
  llama_runner& operator=(const llama_runner&) = delete;

  const llama_runner_config& config() const { return config_; }
  /// Decode graphs captured so far, and steps that replayed one.
  struct graph_counts {
    int64_t captured = 0, replayed = 0;
  };
  graph_counts graphs() const { return graph_counts_; }
  dtype storage() const { return weights_.storage(); }
  /// The cache layout this model needs, written from the runner's storage type: elements of
  /// that type, or float8 E4M3 (--kv-cache-dtype fp8).
  kv_cache_layout cache_layout(int64_t num_blocks, int64_t block_size,
                               kv_format format = kv_format::activations) const;

  /// Writes the batch's new K/V into `cache` and the logits (num_logits, vocab) as float32
  /// into `logits` (resized). Synchronous. Throws std::invalid_argument on a batch or cache
  /// that does not fit, cuda_error on a device failure.
  void forward(const llama_host_batch& batch, device_kv_cache& cache, std::vector<float>& logits);

  /// As forward, but the argmax of each logits row is taken on the device; `tokens`
  /// (num_logits) gets the lowest index among equal maxima. `masks`, when given, is called
  /// once the forward is queued (so the host computes masks while the device works) and its
  /// rows are masked on the device before the argmax.
  void forward_greedy(const llama_host_batch& batch, device_kv_cache& cache,
                      std::vector<int32_t>& tokens,
                      const std::function<host_token_masks()>& masks = {});

  /// As forward, but each logits row's token is drawn on the device (sample_rows) and only
  /// `tokens` (num_logits) come back. `draws`, then `masks` when given, are called once the
  /// forward is queued (the host prepares them while the device works); draws().num_rows must
  /// be num_logits. Throws std::invalid_argument on draws or masks out of bounds (an edit
  /// token outside the vocabulary or out of order, offsets that do not tile the edits, a mask
  /// row outside the logits or named twice).
  void forward_sample(const llama_host_batch& batch, device_kv_cache& cache,
                      const std::function<host_draws()>& draws, std::vector<int32_t>& tokens,
                      const std::function<host_token_masks()>& masks = {});

 private:
  /// Checks the batch and runs the forward, from a graph where its shape has one (captured on
  /// the shape's first step); returns the device float32 logits (num_logits, vocab).
  float* run(const llama_host_batch& batch, device_kv_cache& cache);
  /// Masks rows of the device logits (num_logits, vocab) by `masks`.
  void apply_masks(float* logits, int64_t num_logits, const host_token_masks& masks);
  /// Checks `masks` against num_logits rows and queues their upload to ws_.mask_rows and
  /// ws_.mask_words.
  void upload_masks(int64_t num_logits, const host_token_masks& masks);
  /// Checks `draws` against num_logits rows and the vocabulary and queues their upload.
  void upload_draws(int64_t num_logits, const host_draws& draws);
  void ensure_workspace(int64_t num_tokens);
  /// The step's batch arrays on the device, sent together (stage_batch).
  struct device_batch {
    const int32_t *token_ids, *positions, *logits_indices, *query_start_loc, *seq_lens,
        *block_tables;
    const int64_t* slot_mapping;
  };
  /// Copies the batch's arrays (with the positions the rotation reads) into one pinned host
  /// buffer and queues one asynchronous copy of it to the device. The staging buffer is
  /// reused by the next step: every forward waits for its stream before returning.
  device_batch stage_batch(const llama_host_batch& batch, const int32_t* rope_positions);
  /// Queues every launch of the forward of a staged batch (`b`: its host side, for the
  /// split of decodes from prefills); max_seq_len bounds the contexts (a graph's bound for a
  /// batch of decodes only). Allocates nothing once the scratch has grown to the batch.
  float* enqueue(const llama_host_batch& b, const device_batch& batch, int64_t max_query_len,
                 int64_t max_seq_len, device_kv_cache& cache);
  /// A decode step padded to `shape` (decode_graph_shape_of), through its graph.
  float* run_graph(const llama_host_batch& batch, const decode_graph_shape& shape,
                   device_kv_cache& cache);
  /// The device addresses a captured graph bakes in: the scratch and the cache.
  std::vector<const void*> workspace_signature(const device_kv_cache& cache) const;
  /// Uploads one projection (out_features, in_features): quantized where `quantized` is set,
  /// else `dense` in the storage type; `name` keys the dense copy and names errors.
  linear_weight upload_linear(const std::string& name, const host_tensor& dense,
                              const quantized_matrix& quantized, int64_t out_features,
                              int64_t in_features);
  /// y(n, out) = x(n, in) @ w^T + bias in the storage type (projector::linear).
  void linear(const linear_weight& w, const void* x, const void* bias, int64_t n,
              int64_t in_features, int64_t out_features, void* y);
  /// Layer l's mixture of experts on x (n, dim), in place (expert_dispatch: routed on the
  /// host, one wait for the router's logits).
  void moe_feed_forward(int64_t l, void* x, int64_t n);
  gate_activation activation() const;

  /// A layer's weights as device pointers, resolved once at upload: the step does no lookups.
  /// Optional parts are null (or expert_width 0) where the layer has none.
  struct resolved_layer {
    const void *input_norm = nullptr, *post_norm = nullptr, *qkv_bias = nullptr;
    linear_weight qkv, o, gate_up, down;  // gate_up and down: a dense layer's MLP
    const void *q_norm = nullptr, *k_norm = nullptr;
    const void *attn_out_norm = nullptr, *mlp_out_norm = nullptr;
    int64_t expert_width = 0, shared_width = 0;
    const void* router = nullptr;
    std::vector<linear_weight> gate_up_of, down_of;  // by expert
    linear_weight shared_gate_up, shared_down;
    const void* shared_gate = nullptr;
  };
  std::vector<resolved_layer> resolved_;  // by layer
  const void* embed_ = nullptr;
  const void* final_norm_ = nullptr;
  linear_weight head_;  // the LM head, or the embedding table where tied
  const float* cos_sin_ = nullptr;
  const float* local_cos_sin_ = nullptr;  // Gemma 3's windowed layers' table, or null
  std::vector<std::unique_ptr<device_quantized_matrix>> quantized_;

  llama_runner_config config_;
  weight_store weights_;
  cudaStream_t stream_;
  projector projector_;                  // every projection, dense or quantized
  expert_dispatch experts_;              // mixtures of experts
  std::vector<int32_t> rope_positions_;  // LongRoPE: the positions the rotation reads

  struct captured_graph {
    graph_exec exec;
    float* logits = nullptr;             // where its logits land
    std::vector<const void*> workspace;  // workspace_signature at capture
  };
  std::map<decode_graph_shape, captured_graph> graphs_;
  std::set<decode_graph_shape> uncapturable_;  // shapes whose capture failed: eager
  graph_counts graph_counts_;

  struct workspace {
    int64_t tokens = 0;  // capacity
    // Activations, of the storage type.
    device_buffer x, residual;            // (n, dim)
    device_buffer qkv;                    // (n, q_size + 2 * kv_size)
    device_buffer q, attn;                // (n, q_size)
    device_buffer gate_up;                // (n, 2 * hidden)
    device_buffer act;                    // (n, hidden)
    device_buffer last_x, last_residual;  // (n, dim) rows that sample
    device_buffer logits;                 // (n, vocab) storage type
    device_buffer logits_f32;             // (n, vocab) float32
    device_buffer next_tokens;            // (n) int32
    device_buffer mask_rows, mask_words;  // structured output, grown on demand
    device_buffer draw_rows, edit_offsets, edits, mask_of_row;  // forward_sample, grown on demand
    // The batch, on the device, and its pinned host staging (stage_batch), grown on demand.
    device_buffer batch;
    pinned_buffer batch_staging;
    device_buffer attention;  // decode scratch, grown on demand
  } ws_;
};

}  // namespace actorllm::cuda
