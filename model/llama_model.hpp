#pragma once
/// The Llama family (Llama, Mistral, Qwen2) on the CPU: float32 weights, one forward pass
/// over a whole step's batch (prefill chunks and decodes together) against the paged KV cache.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu/all_reduce.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_cache.hpp"
#include "model/model_config.hpp"

namespace actorllm {

struct llama_layer_weights {
  std::vector<float> input_norm;  // (dim)
  std::vector<float> qkv;         // (q_size + 2 * kv_size, dim)  q, k, v projections fused
  std::vector<float> qkv_bias;    // (q_size + 2 * kv_size) or empty
  std::vector<float> o;           // (dim, q_size)
  std::vector<float> post_norm;   // (dim)
  std::vector<float> gate_up;     // (2 * hidden, dim)  gate then up, fused
  std::vector<float> down;        // (dim, hidden)
};

struct llama_weights {
  std::vector<float> embed;  // (vocab, dim)
  std::vector<llama_layer_weights> layers;
  std::vector<float> final_norm;  // (dim)
  std::vector<float> lm_head;     // (vocab, dim); empty when tied to embed
  std::vector<float> cos_sin;     // (max_position, head_dim) rotary table

  /// The LM head: lm_head, or the embedding table where the two are tied.
  const std::vector<float>& head() const { return lm_head.empty() ? embed : lm_head; }

  /// Bytes of weights read per decoded token (everything but the embedding table, which is
  /// only gathered, unless it doubles as the LM head).
  int64_t bytes_read_per_token(const model_config_hf& config) const;
};

/// The projection weights again, packed for cpu::linear_packed (decode-sized batches). Made
/// when a CPU engine loads the model (prepare_cpu_weights), or else on the first CPU forward,
/// so a model that only feeds a GPU never pays for them: they double the host memory of the
/// projections.
struct packed_llama_weights {
  struct layer {
    cpu::packed_matrix qkv, o, gate_up, down;
  };
  std::vector<layer> layers;
  cpu::packed_matrix lm_head;  // packed from embed when tied
};

/// Scratch buffers of one forward pass, grown to the largest batch seen and reused: no
/// allocation once warm. One per caller, so one model can serve several workers at once.
struct forward_workspace {
  int64_t capacity = 0;
  std::vector<float> x, residual, q, k, v, attn, gate_up, act, last;
  /// Tensor parallelism: this worker's rank and its group's all-reduce (null: no parallelism).
  cpu::host_all_reduce* all_reduce = nullptr;
  int32_t tp_rank = 0;
};

/// Which slice of the model a worker holds: rank `rank` of `size` takes every size-th part of
/// the attention heads, KV heads and MLP columns (Megatron-style: column-parallel q/k/v and
/// gate/up, row-parallel o and down, one all-reduce after each).
struct tp_shard {
  int32_t rank = 0;
  int32_t size = 1;
};

class llama_model {
 public:
  /// Loads config.json and the safetensors weights of `model_dir`. Throws std::runtime_error
  /// naming a missing tensor, a wrong shape or an unsupported architecture.
  explicit llama_model(const std::filesystem::path& model_dir, tp_shard shard = {});

  /// The shard's view: num_heads, num_kv_heads and intermediate_size are this rank's share.
  const model_config_hf& config() const { return config_; }
  tp_shard shard() const { return shard_; }
  const llama_weights& weights() const { return weights_; }

  /// Computes the batch's new K/V into `cache` and writes logits (logits_indices.size(), vocab)
  /// into `logits`, resized as needed. The model is read-only: concurrent calls are safe with
  /// distinct caches and workspaces.
  void forward(const forward_batch& batch, kv_cache& cache, forward_workspace& ws,
               std::vector<float>& logits) const;

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
  /// y = x w^T + bias through the packed kernel for decode-sized batches, OpenBLAS otherwise.
  static void project(const float* x, const std::vector<float>& w, const cpu::packed_matrix* pw,
                      const float* bias, int64_t n, int64_t in, int64_t out, float* y);

  model_config_hf config_;
  tp_shard shard_;
  llama_weights weights_;
  struct lazy_packed {
    std::once_flag once;
    std::unique_ptr<packed_llama_weights> weights;
  };
  std::unique_ptr<lazy_packed> packed_ = std::make_unique<lazy_packed>();
};

/// The rotary table (max_position, head_dim): head_dim/2 cosines then sines per position,
/// with llama3 or linear rope scaling applied to the inverse frequencies.
std::vector<float> build_rotary_table(const model_config_hf& config, int64_t max_position);

}  // namespace actorllm
