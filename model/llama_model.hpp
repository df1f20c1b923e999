#pragma once
/// Decoder-only transformers on the CPU (the families of model/architectures.cpp: Llama,
/// Mistral, Qwen2/3, Phi-3, Gemma 2/3 and the mixtures of experts): float32 weights, or
/// (dense models) packed 16-bit or int8 matrices as their only copy (weight_options.hpp), one
/// forward pass over a whole step's batch (prefill chunks and decodes together) against the
/// paged KV cache. What sets a family apart is data in model_config_hf, read here as hooks
/// (q/k norms, windows, soft-capping, sandwich norms, GeGLU, experts).
/// Loading is llama_weights.cpp, sharding tensor_parallel.cpp, the rotary table
/// rotary_table.cpp, packing packed_weights.cpp; this file is the model and its forward.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu/all_reduce.hpp"
#include "kernels/cpu/lora.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_weights.hpp"
#include "model/lora_adapter.hpp"
#include "model/model_config.hpp"
#include "model/moe_layer.hpp"
#include "model/packed_weights.hpp"
#include "model/tensor_parallel.hpp"
#include "model/weight_options.hpp"

namespace actorllm {

/// Scratch buffers of one forward pass, grown to the largest batch seen and reused: no
/// allocation once warm. One per caller, so one model can serve several workers at once.
struct forward_workspace {
  int64_t capacity = 0;
  std::vector<float> x, residual, q, k, v, attn, gate_up, act, last;
  std::vector<int32_t> rope_positions;  // LongRoPE's rows for sequences past the original context
  moe_workspace moe;
  std::vector<cpu::lora_weights> lora_pairs;  // the batch's adapters' pairs for one projection
  std::vector<float> lora_scratch;
  /// Tensor parallelism: this worker's rank and its group's all-reduce (null: no parallelism).
  cpu::host_all_reduce* all_reduce = nullptr;
  int32_t tp_rank = 0;
};

class llama_model {
 public:
  /// Loads config.json and the safetensors weights of `model_dir`, stored as `options` and
  /// the checkpoint say (choose_weight_format). Throws std::runtime_error naming a missing
  /// tensor, a wrong shape, an unsupported architecture, dtype or quantization method.
  explicit llama_model(const std::filesystem::path& model_dir, tp_shard shard = {},
                       const weight_options& options = {});

  /// The shard's view: num_heads, num_kv_heads and intermediate_size are this rank's share.
  const model_config_hf& config() const { return config_; }
  tp_shard shard() const { return shard_; }
  /// The float32 weights. Where packed panels are the only copy of the matrices (a 16-bit or
  /// int8 store), the embedding table, projections and LM head here are empty: read them
  /// through cpu_weights() (cpu::unpack_matrix gives them as float32).
  const llama_weights& weights() const { return weights_; }
  /// What the matrices are stored as, and the startup log's line for it.
  const weight_choice& storage() const { return storage_; }
  /// Whether packed panels are the only copy of the matrices (storage() is not float32).
  bool packed_only() const { return storage_.packed_only(); }
  /// The packed weights (made now where they are a copy); null where the CPU lacks AVX2.
  const packed_llama_weights* cpu_weights() const { return packed(); }
  /// Bytes of weights one decoded token reads, in the form they are stored.
  int64_t bytes_read_per_token() const;
  /// Number of weights one decoded token reads (the bytes a device copy of another element
  /// type takes follow from it).
  int64_t num_weights_read_per_token() const;
  /// Computes the batch's new K/V into `cache` and writes logits (logits_indices.size(), vocab)
  /// into `logits`, resized as needed. The model is read-only: concurrent calls are safe with
  /// distinct caches and workspaces.
  /// Rows of batch.token_adapters add their LoRA adapter's update after each projection it
  /// targets (dense models on one shard: throws std::invalid_argument otherwise).
  /// With `hidden`, also the final hidden states (after the model's last norm) of the rows
  /// batch.hidden_indices names: (hidden_indices.size(), hidden_size), for embeddings.
  void forward(const forward_batch& batch, kv_cache& cache, forward_workspace& ws,
               std::vector<float>& logits, std::vector<float>* hidden = nullptr) const;

  kv_cache_shape cache_shape(int64_t num_blocks, int64_t block_size,
                             kv_cache_dtype dtype = kv_cache_dtype::float32) const;

  /// Packs the weights for the CPU forward now rather than in the first forward (about a
  /// second per 100M parameters on this class of machine, which the first request would
  /// wait for). Thread-safe; a no-op once done or where the CPU lacks AVX2/FMA.
  void prepare_cpu_weights() const { packed(); }
  /// Whether the packed weights exist (made by prepare_cpu_weights or a CPU forward); not
  /// to be asked while another thread may be packing them.
  bool has_cpu_weights() const { return packed_->weights != nullptr; }

 private:
  void ensure_workspace(forward_workspace& ws, int64_t num_tokens) const;
  /// The packed weights, made once (thread-safe); null where the CPU lacks AVX2/FMA.
  const packed_llama_weights* packed() const;
  /// q, k and v of layer `w` into ws.q, ws.k, ws.v, each written where it goes.
  void project_qkv(const float* x, const llama_layer_weights& w,
                   const packed_llama_weights::layer* pl, int64_t n, forward_workspace& ws) const;
  /// Rotates q and k of layer `layer` by its rotary table (LongRoPE's long rows where due).
  void rotate(const forward_batch& batch, int64_t layer, forward_workspace& ws) const;
  /// x = the layer's MLP or experts applied to x.
  void feed_forward(const forward_batch& batch, int64_t layer,
                    const packed_llama_weights::layer* pl, forward_workspace& ws, float* x) const;
  /// Multi-LoRA: y (rows of y_stride floats) += each token row's adapter update of projection
  /// `target` of `layer` for its input x (num_tokens, in); nothing where the batch has no
  /// adapters.
  void add_adapters(const forward_batch& batch, int64_t layer, lora_target target, const float* x,
                    int64_t in, float* y, int64_t out, int64_t y_stride,
                    forward_workspace& ws) const;
  /// y = x w^T + bias through the packed kernel for decode-sized batches, OpenBLAS otherwise.
  static void project(const float* x, const std::vector<float>& w, const cpu::packed_matrix* pw,
                      const float* bias, int64_t n, int64_t in, int64_t out, float* y);

  model_config_hf config_;
  tp_shard shard_;
  weight_choice storage_;
  llama_weights weights_;
  struct lazy_packed {
    std::once_flag once;
    std::unique_ptr<packed_llama_weights> weights;
  };
  std::unique_ptr<lazy_packed> packed_ = std::make_unique<lazy_packed>();
};

}  // namespace actorllm
